import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { sendError } from './http/errors.js';
import type { MetricsRouteKind } from './metrics.js';
import { upstreamRequestHeaders } from './proxy/headers.js';
import { forward } from './proxy/forward.js';
import type { NormalisedPath } from './routing/normalise.js';
import type { GatewayServices } from './services.js';
import { workflowInference } from './v2/handler.js';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** A caller's X-Request-Id is kept when it is a sane token, so traces join up; else a new one. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * The hot path for `/events/...`: key check, routing decision, rate limit, proxy. No Express,
 * no per-request allocation of clients; the only awaits are the ones that may need Redis (which
 * the caches usually spare) and the upstream itself.
 */
export function createEventsHandler(
  s: GatewayServices,
): (req: IncomingMessage, res: ServerResponse, path: NormalisedPath) => Promise<void> {
  const bodyLimit = s.config.bodyLimitBytes;
  return async (req, res, path) => {
    const requestId = requestIdOf(req);
    const area = path.segments[1];
    const kind: MetricsRouteKind = area === 'bda' || area === 'platform' ? area : 'none';
    let module = 'none';
    try {
      const grant = await s.keys.check(req.headers.authorization);
      module = grant.module;
      const target = await s.events.resolve(req.method ?? 'GET', path, grant);
      if (grant.rateLimit !== undefined) await s.rateLimiter.take(grant);
      s.usage.record(grant.id);
      if ('builtIn' in target) {
        res.setHeader('x-request-id', requestId);
        await target.builtIn(req, res, { grant, requestId, resource: target.resource, path });
        s.metrics.request(kind, res.statusCode, module);
        return;
      }
      const started = performance.now();
      const headers = upstreamRequestHeaders(req, grant, requestId);
      // A model published as a workflow service gets the V2 request checks before it is sent on.
      const status = await (workflowInference(s, req, res, path, target, grant, requestId) ??
        forward(
          req,
          res,
          s.upstreams.get(target.proxy.origin),
          target.proxy.path,
          headers,
          requestId,
          bodyLimit,
        ));
      s.metrics.upstreamDuration(kind, (performance.now() - started) / 1000);
      s.metrics.request(kind, status, module);
    } catch (thrown) {
      if (!res.headersSent) res.setHeader('x-request-id', requestId);
      const err = sendError(res, thrown, s.log);
      if (err.status === 401) s.metrics.authFailure(err.code);
      s.metrics.request(kind, err.status, module);
    }
  };
}
