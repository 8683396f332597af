import type { GatewayServices } from '../../services.js';
import type { V2EndpointSpec } from '../endpoint.js';
import { sendJson } from '../http.js';

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

/** GET /v2/health/live (open). */
export const healthLive: V2EndpointSpec = {
  name: 'health-live',
  method: 'GET',
  path: ['health', 'live'],
  security: 'none',
  grpc: 'ServerLive',
  underWorkflow: 'runtime',
  forModel: false,
  rest: async (_ctx, _req, res) => sendJson(res, 200, { live: true }),
  openapi: {
    operationId: 'v2Live',
    summary: 'The gateway is up',
    ok: {
      status: 200,
      description: 'Live',
      schema: { type: 'object', properties: { live: { type: 'boolean' } } },
    },
    errors: [],
  },
};

/** GET /v2/health/ready (open). */
export const healthReady: V2EndpointSpec = {
  name: 'health-ready',
  method: 'GET',
  path: ['health', 'ready'],
  security: 'none',
  grpc: 'ServerReady',
  underWorkflow: 'runtime',
  forModel: false,
  rest: async ({ s }, _req, res) => {
    const ready = await serverReady(s);
    sendJson(res, ready ? 200 : 503, { ready });
  },
  openapi: {
    operationId: 'v2Ready',
    summary: 'The gateway can check keys now',
    ok: {
      status: 200,
      description: 'Ready',
      schema: { type: 'object', properties: { ready: { type: 'boolean' } } },
    },
    errors: [503],
  },
};
