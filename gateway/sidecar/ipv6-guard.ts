import { createServer, isIPv4, type Server as NetServer, type Socket } from 'node:net';
import type { Logger } from '../../common/logger.js';

/**
 * The guarded port on every IPv6 address of the pod as well: the sidecar binds the pod's IPv4
 * address, and a pod has IPv6 addresses too (its dual-stack address, and a link-local one on any
 * cluster whose nodes run IPv6) where a workload listening on `[::]` would answer other pods
 * without a key. Bound first (the sidecar starts before the workload), `[::]:<port>` is the
 * sidecar's: a workload that tries the IPv6 wildcard fails to start rather than run unguarded, as
 * one that tries `0.0.0.0` does. Connections it accepts go to `serve` (the HTTP server serves
 * them; the gRPC port, whose server takes no socket from outside, closes them). Undefined when the
 * pod has no IPv6 at all.
 */
export async function guardIpv6(
  serve: (socket: Socket) => void,
  port: number,
  log: Logger,
): Promise<NetServer | undefined> {
  const v6 = createServer(serve);
  try {
    await new Promise<void>((resolve, reject) => {
      v6.once('error', reject);
      v6.listen({ port, host: '::', ipv6Only: true }, () => {
        v6.off('error', reject);
        resolve();
      });
    });
    return v6;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'EAFNOSUPPORT' || code === 'EADDRNOTAVAIL') {
      log.info({ port }, 'no IPv6 in this pod: its IPv4 address is the only one to guard');
      return undefined;
    }
    if (code === 'EADDRINUSE') {
      throw new Error(
        `port ${port} is taken on every IPv6 address ([::]:${port}) by another process of the pod: the workload must listen on 127.0.0.1 only, or other pods would reach it without a key`,
      );
    }
    throw err;
  }
}

/** In a pod (the sidecar on the pod's IPv4 address), not beside a local process on loopback. */
export const guardsAPod = (host: string): boolean => isIPv4(host) && !host.startsWith('127.');
