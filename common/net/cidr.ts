import { BlockList, isIP } from 'node:net';

/** `10.0.0.0/8`, `2001:db8::/32`: an address and a prefix length that fits its family. */
export function isCidr(value: string): boolean {
  return parseCidr(value) !== undefined;
}

interface Cidr {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

function parseCidr(value: string): Cidr | undefined {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(value);
  if (match === null) return undefined;
  const [, address = '', bits = ''] = match;
  const version = isIP(address);
  const prefix = Number(bits);
  if (version === 0 || prefix > (version === 4 ? 32 : 128)) return undefined;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/** A client seen over IPv6 as `::ffff:a.b.c.d` is the IPv4 client a.b.c.d. */
const unmapped = (address: string): string =>
  address.toLowerCase().startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;

/** The networks a key may be used from; built once per key and kept with its cached grant. */
export class CidrAllowlist {
  private readonly list = new BlockList();

  constructor(cidrs: readonly string[]) {
    for (const c of cidrs) {
      const parsed = parseCidr(c);
      // Entries are validated where they enter (API, CRD); one that is not a CIDR allows nothing.
      if (parsed !== undefined) this.list.addSubnet(parsed.address, parsed.prefix, parsed.family);
    }
  }

  allows(address: string | undefined): boolean {
    if (address === undefined) return false;
    const plain = unmapped(address);
    const version = isIP(plain);
    if (version === 0) return false;
    return this.list.check(plain, version === 4 ? 'ipv4' : 'ipv6');
  }
}
