import type { V2Endpoint } from '../endpoint.js';
import { expectMethod, sendJson } from '../http.js';

/** GET /v2/health/live|ready (open). */
export const health: V2Endpoint<'live' | 'ready'> = async ({ s }, req, res, which) => {
  expectMethod(req, 'GET');
  if (which === 'live') return sendJson(res, 200, { live: true });
  // Ready means a call could be checked now: the key store answers, and no shutdown is under way
  // (as /readyz: a draining replica leaves its load balancer by either probe).
  if (s.draining) return sendJson(res, 503, { ready: false });
  try {
    await s.redis.ping();
  } catch {
    return sendJson(res, 503, { ready: false });
  }
  sendJson(res, 200, { ready: true });
};
