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

/** The IPv4-mapped IPv6 range: `::ffff:a.b.c.d` (or `::ffff:a00:0`) is the IPv4 address a.b.c.d. */
const MAPPED_PREFIX = 96;
const mappedRange = new BlockList();
mappedRange.addSubnet('::ffff:0:0', MAPPED_PREFIX, 'ipv6');

/** The IPv4 address an IPv6 address in the mapped range stands for, however it is spelt. */
function mappedIpv4(address: string): string | undefined {
  if (!mappedRange.check(address, 'ipv6')) return undefined;
  // The URL parser writes every spelling the same way, the last 32 bits as two hex groups.
  const groups = new URL(`http://[${address}]/`).hostname.slice(1, -1).split(':');
  const [hi = 0, lo = 0] = groups.slice(-2).map((g) => parseInt(g, 16));
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/**
 * A set of networks: the ones a key may be used from (built once per key and kept with its cached
 * grant), or the proxies whose forwarding headers are believed. The families are kept apart: Node's
 * BlockList matches IPv4 addresses against IPv6 ranges too (`::/0` would admit every IPv4 client),
 * so an IPv4 client matches only IPv4 entries, and IPv4-mapped ones written as such
 * (`::ffff:10.0.0.0/104` is 10.0.0.0/8).
 */
export class CidrAllowlist {
  private readonly v4 = new BlockList();
  private readonly v6 = new BlockList();

  constructor(cidrs: readonly string[]) {
    for (const c of cidrs) {
      const parsed = parseCidr(c);
      // Entries are validated where they enter (API, CRD); one that is not a CIDR allows nothing.
      if (parsed === undefined) continue;
      const mapped = parsed.family === 'ipv6' ? mappedIpv4(parsed.address) : undefined;
      if (mapped !== undefined && parsed.prefix >= MAPPED_PREFIX)
        this.v4.addSubnet(mapped, parsed.prefix - MAPPED_PREFIX, 'ipv4');
      else if (parsed.family === 'ipv4') this.v4.addSubnet(parsed.address, parsed.prefix, 'ipv4');
      else this.v6.addSubnet(parsed.address, parsed.prefix, 'ipv6');
    }
  }

  allows(address: string | undefined): boolean {
    if (address === undefined) return false;
    const plain = unmapped(address);
    const version = isIP(plain);
    if (version === 4) return this.v4.check(plain, 'ipv4');
    return version === 6 && this.v6.check(plain, 'ipv6');
  }
}

/** The prefix length of a CIDR (0 for `0.0.0.0/0` or `::/0`: every address), or undefined. */
export function cidrPrefix(value: string): number | undefined {
  return parseCidr(value)?.prefix;
}
