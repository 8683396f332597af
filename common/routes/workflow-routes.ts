import type { Redis } from 'ioredis';
import { z } from 'zod';
import { redisUnavailable } from '../redis/unavailable.js';
import { KEY_PREFIX, redisChannels } from '../redis/schema.js';
import { routeSchema, type Route } from '../resources/grant.js';

/**
 * The Redis route table. `RouteWriter` is the one way a route is written or removed, and only the
 * operator uses it (from labelled Services and Models). `WorkflowRoutes` reads the workflow half
 * for the management API (which workflows a user owns). Every change is announced on the routes
 * channel so gateway replicas drop their cached copy at once.
 */

// Write only when the value changes, and announce it in the same script, so a reconcile that finds
// nothing new costs one round trip and no gateway cache is invalidated for nothing.
const PUT = `
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[2], KEYS[1])
return 1`;

// Delete only the route the given source wrote (any route when no source is given): two resources
// must not remove each other's route.
const REMOVE = `
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if ARGV[1] ~= '' then
  local ok, route = pcall(cjson.decode, cur)
  if ok and type(route) == 'table' and route.source ~= ARGV[1] then return 0 end
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], KEYS[1])
return 1`;

/** The Redis route table (derived state: the operator rebuilds it from resources). */
export class RouteWriter {
  constructor(private readonly redis: Redis) {}

  /** Sets the route at `key`; true if it changed. */
  async put(key: string, route: Route): Promise<boolean> {
    // A route the gateways cannot parse would be "no such service" to them: refused here instead.
    const checked = routeSchema.parse(route);
    return (await this.redis.eval(PUT, 1, key, JSON.stringify(checked), redisChannels.routes)) === 1;
  }

  /** Removes the route at `key` if `source` wrote it (any route without `source`); true if one was removed. */
  async remove(key: string, source?: string): Promise<boolean> {
    return (await this.redis.eval(REMOVE, 1, key, source ?? '', redisChannels.routes)) === 1;
  }
}

export interface OwnedWorkflow {
  workflow: string;
  services: string[];
}

const BDA_ROUTE_PREFIX = `${KEY_PREFIX}route:bda:`;
const SCAN_COUNT = 1000;

/** The workflow half of the route table, `tg:route:bda:<workflow>:<service>`, with its owners (read only). */
export class WorkflowRoutes {
  constructor(private readonly redis: Redis) {}

  /** The workflows every service of which belongs to `owner`, with their services, sorted. */
  async ownedBy(owner: string): Promise<OwnedWorkflow[]> {
    const byWorkflow = new Map<string, { services: string[]; allOwned: boolean }>();
    for (const { workflow, service, route } of await this.scan(`${BDA_ROUTE_PREFIX}*`)) {
      const entry = byWorkflow.get(workflow) ?? { services: [], allOwned: true };
      entry.services.push(service);
      entry.allOwned &&= route?.owner === owner;
      byWorkflow.set(workflow, entry);
    }
    return [...byWorkflow]
      .filter(([, e]) => e.allOwned)
      .map(([workflow, e]) => ({ workflow, services: e.services.sort() }))
      .sort((a, b) => (a.workflow < b.workflow ? -1 : 1));
  }

  private routesOf(workflow: string): Promise<ScannedRoute[]> {
    return this.scan(`${BDA_ROUTE_PREFIX}${workflow}:*`);
  }

  private async scan(pattern: string): Promise<ScannedRoute[]> {
    const found: ScannedRoute[] = [];
    try {
      let cursor = '0';
      do {
        const [next, keys] = await this.redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        cursor = next;
        if (keys.length === 0) continue;
        const values = await this.redis.mget(...keys);
        keys.forEach((key, i) => {
          const [workflow, service] = key.slice(BDA_ROUTE_PREFIX.length).split(':');
          const value = values[i];
          if (workflow === undefined || service === undefined || value === null || value === undefined)
            return;
          found.push({ workflow, service, route: parseRoute(value) });
        });
      } while (cursor !== '0');
    } catch (cause) {
      throw redisUnavailable(cause, ROUTES_UNREACHABLE);
    }
    return found;
  }
}

/**
 * A route entry as scanned; `route` is null when the entry cannot be read. Such an entry counts as
 * another owner's, so its workflow is offered to nobody and taken over by nobody, and it no longer
 * makes every listing fail (the gateway already treats it as an unknown service).
 */
interface ScannedRoute {
  workflow: string;
  service: string;
  route: Pick<Route, 'owner'> | null;
}

const scannedRouteSchema = z.object({ owner: z.string().optional() });

function parseRoute(value: string): ScannedRoute['route'] {
  try {
    const parsed = scannedRouteSchema.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

const ROUTES_UNREACHABLE = 'the route table in Redis cannot be reached';
