import type { CallHead } from './call-head.js';
import { isIPv4, isIPv6 } from 'node:net';
import { CidrAllowlist } from '../../common/net/cidr.js';

/**
 * Which forwarding headers are believed: those added by up to `hops` proxies, each of which must
 * itself be inside `proxies` (as nginx's set_real_ip_from with real_ip_recursive, or Envoy's
 * xff_num_trusted_hops with a trusted-address check). A caller that reaches the gateway directly
 * (a pod calling its Service or NodePort) is not a proxy, and its X-Forwarded-For proves nothing.
 */
export interface ProxyTrust {
  hops: number;
  proxies: CidrAllowlist;
}

export const NO_PROXIES: ProxyTrust = { hops: 0, proxies: new CidrAllowlist([]) };

/**
 * The client's address as far as the gateway can trust it: the connection's peer; while that peer
 * (and each proxy before it, up to `hops`) is a trusted proxy, the X-Forwarded-For entry it added.
 */
export function clientAddress(req: CallHead, trust: ProxyTrust): string | undefined {
  let address = req.socket.remoteAddress;
  if (trust.hops === 0) return address;
  const header = req.headers['x-forwarded-for'];
  const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  for (let hop = 0; hop < trust.hops && trust.proxies.allows(address); hop++) {
    const previous = forwarded.pop();
    if (previous === undefined) break;
    address = previous;
  }
  return address || undefined;
}

/**
 * What one sender holds an address as, for a share per sender: an IPv4 address, or a public IPv6
 * address's /64 (one host is commonly given a whole /64, and could take each of its addresses).
 * Unique-local (fc00::/7: a cluster's pod networks, where a node's pods share a /64), link-local
 * and NAT64 (64:ff9b::/96: every IPv4 client behind the translator) addresses are each their own
 * sender, so one pod does not take the share of every other pod on its node.
 */
export function senderOf(address: string): string {
  const bare = address.split('%', 1)[0] ?? address;
  if (!isIPv6(bare)) return bare;
  if (/^::ffff:/i.test(bare) && isIPv4(bare.slice(7))) return bare.slice(7);
  if (/^(f[cd]|fe[89ab])[0-9a-f]{0,2}:/i.test(bare) || /^64:ff9b::/i.test(bare)) return bare.toLowerCase();
  const [head = '', tail] = bare.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined
      ? left
      : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
