import type { GatewayServices } from '../../services.js';
import type { V2Endpoint } from '../endpoint.js';
import { expectMethod, sendJson } from '../http.js';

/**
 * Ready means a call could be checked now: the key store answers, and no shutdown is under way
 * (as /readyz: a draining replica leaves its load balancer by either probe).
 */
export async function serverReady(s: Pick<GatewayServices, 'draining' | 'redis'>): Promise<boolean> {
  if (s.draining) return false;
  try {
    await s.redis.ping();
    return true;
  } catch {
    return false;
  }
}

/** GET /v2/health/live|ready (open). */
export const health: V2Endpoint<'live' | 'ready'> = async ({ s }, req, res, which) => {
  expectMethod(req, 'GET');
  if (which === 'live') return sendJson(res, 200, { live: true });
  const ready = await serverReady(s);
  sendJson(res, ready ? 200 : 503, { ready });
};
