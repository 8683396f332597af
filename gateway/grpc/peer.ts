import { isIP } from 'node:net';

/**
 * The caller's address: grpc-js gives `<address>:<port>` (an IPv6 address unbracketed). Undefined
 * when it cannot be read (the connection is gone), and then nothing is done for the call: an
 * address taken for loopback could pass a key's network allowlist.
 */
export function peerAddress(peer: string): string | undefined {
  const at = peer.lastIndexOf(':');
  const address = at > 0 && /^\d+$/.test(peer.slice(at + 1)) ? peer.slice(0, at) : peer;
  return isIP(address) === 0 ? undefined : address;
}
