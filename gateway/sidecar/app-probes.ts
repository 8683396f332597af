import { connect } from 'node:net';
import type { Request, Response } from 'express';
import { request } from 'undici';
import type { AppProbes } from '../../common/sidecar-probes.js';

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
    const res = await request(`http://127.0.0.1:${port}${path}`, {
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

/** The Express handler of `/app-health/:container/:probe`. */
export function appHealthHandler(probes: AppProbes) {
  return async (req: Request, res: Response): Promise<void> => {
    const probe = probes[`${String(req.params['container'])}/${String(req.params['probe'])}`];
    if (probe === undefined) {
      res.status(404).json({ error: 'no such workload probe', code: 'unknown_endpoint' });
      return;
    }
    const ok = await passes(probe);
    res.status(ok ? 200 : 503).json({ ready: ok });
  };
}
