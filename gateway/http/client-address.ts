import type { IncomingMessage } from 'node:http';
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
export function clientAddress(req: IncomingMessage, trust: ProxyTrust): string | undefined {
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
