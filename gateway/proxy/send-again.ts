const DROPPED_CONNECTION = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);
/**
 * Errors raised before a connection exists, so nothing reached the upstream: a Service with no
 * endpoint yet is refused by kube-proxy's rules or, with some service proxies (kube-router),
 * unreachable; a new Service's name may not resolve yet.
 */
export const BEFORE_CONNECTION = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);
/**
 * Those of them that come at once, so trying again after a pause costs no more than the pause: a
 * name that does not resolve or a connection that times out would make each try slow.
 */
const REFUSED = new Set(['ECONNREFUSED', 'EHOSTUNREACH']);

/**
 * Pauses before each new try of a refused connection, about 2.5 s in all: a Service whose only
 * replica just became ready (a model woken from zero) is refused until kube-proxy has its
 * endpoint, a second or so after the route says ready.
 */
export const REFUSED_PAUSES_MS = [50, 100, 200, 400, 800, 1000] as const;

/**
 * Sends a request the runtime may safely see twice (inference and the gateway's own GETs change
 * nothing): once more on a fresh connection when a kept-alive one was closed under it (a race
 * every keep-alive client has), and again after `refusedPausesMs` while the connection is refused.
 * By hand rather than undici's retry interceptor, which costs every call (a fifth of the
 * throughput, measured). A caller that must answer at once (a readiness check) passes no pauses:
 * refused then means not ready.
 */
export async function sendAgainOnConnectionLoss<T>(
  send: () => Promise<T>,
  refusedPausesMs: readonly number[] = REFUSED_PAUSES_MS,
): Promise<T> {
  let refused = 0;
  let dropped = false;
  for (;;) {
    try {
      return await send();
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code;
      if (typeof code === 'string' && DROPPED_CONNECTION.has(code) && !dropped) {
        dropped = true;
        continue;
      }
      const pause = typeof code === 'string' && REFUSED.has(code) ? refusedPausesMs[refused] : undefined;
      if (pause === undefined) throw err;
      refused += 1;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
