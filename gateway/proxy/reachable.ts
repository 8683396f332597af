import { connect } from 'node:net';

/** How long one try may take: a name that does not resolve or a host that does not answer ARP. */
const CONNECT_TIMEOUT_MS = 1_000;

/**
 * Whether a TCP connection to an origin's host and port opens now. A route that says ready is
 * not yet an address that answers: a woken model's Service is refused until kube-proxy has its
 * endpoint, its name may still be cached as missing, its pod's address not yet known to the
 * bridge. The activator asks this before letting held calls through (as Knative's probes the
 * revision), so no held call spends its only try on a connection that cannot open.
 */
export function reachable(origin: string, timeoutMs = CONNECT_TIMEOUT_MS): Promise<boolean> {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return Promise.resolve(false);
  }
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  // URL keeps an IPv6 literal in brackets; the socket wants it bare.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}
