import { connect } from 'node:net';
import { Agent } from 'undici';
import type { AppProbes } from '../../common/sidecar-probes.js';
import type { OperationsExtra } from '../http/operations.js';
import { sendJson } from '../v2/http.js';

/** The probes' connections to the workload (a dispatcher of undici's; see tools/bundle/). */
const probes = new Agent();

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
    const res = await probes.request({
      origin: `http://127.0.0.1:${port}`,
      path,
      method: 'GET',
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
  return (req, res, segments) => {
    if (segments.length !== 3 || segments[0] !== 'app-health') return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const probe = probes[`${segments[1] ?? ''}/${segments[2] ?? ''}`];
    if (probe === undefined) {
      sendJson(res, 404, { error: 'no such workload probe', code: 'unknown_endpoint' });
      return true;
    }
    void passes(probe).then((ok) => sendJson(res, ok ? 200 : 503, { ready: ok }));
    return true;
  };
}
