import type { Redis } from 'ioredis';
import { redisKeys } from '../../common/redis/schema.js';
import { RouteWriter } from '../../common/routes/workflow-routes.js';
import { grantAudience } from '../../common/resources/grant.js';
import { testSealer } from './signing.js';

/**
 * What the operator writes after a full rebuild of the index: without it, a gateway answers a key
 * or route it cannot find with 503 index_rebuilding instead of 401 or 404. Tests that fill Redis
 * themselves, standing in for the operator, say so with this.
 */
export async function markIndexBuilt(redis: Redis): Promise<void> {
  // Once: a marker that changes tells every gateway that Redis was rebuilt, and they drop their
  // caches, which tests that count Redis commands would see.
  await redis.set(redisKeys.indexMarker, new Date().toISOString(), 'NX');
}

/**
 * Puts a workflow route in Redis as the operator does for a labelled Service (the same writer),
 * for tests of the gateway and the management API that run without an operator.
 */
export async function putWorkflowRoute(
  redis: Redis,
  r: { workflow: string; service: string; url: string; owner: string; sidecar?: boolean },
): Promise<void> {
  await new RouteWriter(redis, await testSealer()).put(redisKeys.bdaRoute(r.workflow, r.service), {
    url: r.url,
    owner: r.owner,
    workflow: r.workflow,
    source: `service/default/${r.workflow}-${r.service}`,
    ...(r.sidecar === true ? { grantAudience: grantAudience.service('default', r.workflow, r.service) } : {}),
  });
  await markIndexBuilt(redis);
}
