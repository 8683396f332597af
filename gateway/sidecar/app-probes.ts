import { connect } from 'node:net';
import { Agent } from 'undici';
import { APP_HEALTH_SEGMENT, type AppProbes } from '../../common/sidecar-probes.js';
import type { OperationsExtra } from '../http/operations.js';
import { sendJson } from '../v2/http.js';

/** The probes' connections to the workload: a fresh one per probe, as the kubelet's. */
const probeAgent = new Agent();

/** True when the workload passed the probe (HTTP 200–399, or a TCP connection accepted). */
async function passes(probe: AppProbes[string]): Promise<boolean> {
  const timeoutMs = probe.timeoutSeconds * 1000;
  if ('tcpSocket' in probe) {
    return new Promise((resolve) => {
      const socket = connect({ host: '127.0.0.1', port: probe.tcpSocket.port, timeout: timeoutMs });
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.once('connect', () => done(true));
      socket.once('timeout', () => done(false));
      socket.once('error', () => done(false));
    });
  }
  const { path, port, httpHeaders } = probe.httpGet;
  try {
    // As the kubelet sends it: a URL on the workload's loopback port (never another host, whatever
    // the path), with spaces escaped and dot segments resolved.
    const origin = `http://127.0.0.1:${port}`;
    const url = new URL(`${origin}${path}`);
    const res = await probeAgent.request({
      origin,
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      reset: true,
      headers: Object.fromEntries(httpHeaders.map((h) => [h.name, h.value])),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    await res.body.dump();
    return res.statusCode >= 200 && res.statusCode < 400;
  } catch {
    return false;
  }
}

/**
 * `GET /app-health/<container>/<probe>` on the operations port (common/sidecar-probes.ts names the
 * path): the workload's own probe, run on its loopback for the kubelet.
 */
export function appHealthHandler(probes: AppProbes): OperationsExtra {
  // Anyone who reaches the operations port may ask for a probe without a key: asks that come while
  // one of the same probe runs share its answer, so they neither multiply the workload's calls
  // nor queue the kubelet's own behind them.
  const running = new Map<string, Promise<boolean>>();
  return (req, res, segments) => {
    if (segments.length !== 3 || segments[0] !== APP_HEALTH_SEGMENT) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const name = `${segments[1] ?? ''}/${segments[2] ?? ''}`;
    const probe = probes[name];
    if (probe === undefined) {
      sendJson(res, 404, { error: 'no such workload probe', code: 'unknown_endpoint' });
      return true;
    }
    let answer = running.get(name);
    if (answer === undefined) {
      answer = passes(probe).finally(() => running.delete(name));
      running.set(name, answer);
    }
    answer
      .then((ok) => sendJson(res, ok ? 200 : 503, { ready: ok }))
      .catch((err: unknown) => res.destroy(err as Error));
    return true;
  };
}
