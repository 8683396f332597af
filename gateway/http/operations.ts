import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { TollgateError } from '../../common/errors.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';
import type { GatewayServices } from '../services.js';
import { sendJson } from '../v2/http.js';
import { sendError } from './errors.js';

/**
 * `/healthz`, `/readyz` and `/metrics`, as both placements serve them: on an operations port (a
 * sidecar's; the central gateway's `metricsPort`), and on the central gateway's traffic port beside
 * the management API, `/metrics` only when it has no operations port. Plain node:http, so a
 * sidecar (one per guarded pod) carries no web framework in memory for three fixed paths.
 * Answers and returns true when the request is one of them.
 */
export function answerOperations(
  s: GatewayServices,
  req: IncomingMessage,
  res: ServerResponse,
  { metrics }: { metrics: boolean } = { metrics: true },
): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  // Matched as Express matched them: one trailing slash and the case of letters do not matter.
  const path = pathOf(req).toLowerCase();
  if (path === '/healthz') {
    sendJson(res, 200, { status: 'ok' });
    return true;
  }
  if (path === '/readyz') {
    // Ready means a request could be checked right now: Redis answers, and no shutdown is under way.
    if (s.draining) {
      sendError(res, new TollgateError('shutting_down', 'this gateway replica is shutting down'), s.log);
      return true;
    }
    s.redis
      .ping()
      .then(
        () => sendJson(res, 200, { status: 'ready' }),
        (err: unknown) => sendError(res, redisUnavailable(err), s.log),
      )
      .catch((err: unknown) => res.destroy(err as Error));
    return true;
  }
  if (metrics && path === '/metrics') {
    s.metrics.registry
      .metrics()
      .then(
        (text) => {
          res.writeHead(200, { 'content-type': s.metrics.registry.contentType });
          res.end(text);
        },
        (err: unknown) => sendError(res, err, s.log),
      )
      .catch((err: unknown) => res.destroy(err as Error));
    return true;
  }
  return false;
}

/** A request the operations port answers beyond the three above (a sidecar's workload probes). */
export type OperationsExtra = (req: IncomingMessage, res: ServerResponse, segments: string[]) => boolean;

/**
 * A sidecar's operations port: health, readiness, metrics and `extra`. They live apart from the
 * port the workload's traffic comes through, where every path is the workload's.
 */
export function createOperationsServer(s: GatewayServices, extra?: OperationsExtra): Server {
  return createServer((req, res) => {
    if (answerOperations(s, req, res)) return;
    const path = pathOf(req);
    if (extra?.(req, res, path.split('/').slice(1)) === true) return;
    sendError(res, new TollgateError('unknown_endpoint', `no such endpoint: ${req.method ?? ''} ${path}`));
  });
}

/** The request's path without its query and without one trailing slash. */
function pathOf(req: IncomingMessage): string {
  return ((req.url ?? '/').split('?', 1)[0] ?? '/').replace(/(.)\/$/, '$1');
}
