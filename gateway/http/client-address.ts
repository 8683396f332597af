import type { IncomingMessage } from 'node:http';

/**
 * The client's address as far as the gateway can trust it: the connection's peer, or with
 * `trustedProxies` proxies in front (an ingress controller is one), the X-Forwarded-For entry that
 * many hops back. Entries further left are written by the client and prove nothing.
 */
export function clientAddress(req: IncomingMessage, trustedProxies: number): string | undefined {
  const peer = req.socket.remoteAddress;
  if (trustedProxies === 0) return peer;
  const header = req.headers['x-forwarded-for'];
  const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  const hops = [...forwarded, peer ?? ''];
  // With fewer entries than trusted proxies, the leftmost is the best there is.
  return hops[Math.max(0, hops.length - 1 - trustedProxies)] || undefined;
}
