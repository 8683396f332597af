import type { Redis } from 'ioredis';
import { z } from 'zod';
import { TollgateError } from '../errors.js';
import { KEY_PREFIX, redisChannels, redisKeys } from '../redis/schema.js';
import type { Route } from '../resources/grant.js';

/**
 * The workflow half of the route table: `tg:route:bda:<workflow>:<service>` → JSON Route. The
 * operator fills it from labelled Services; `tollgate route add` registers one by hand. Every change
 * is announced on the routes channel so gateway replicas drop their cached copy at once.
 */

// The shape of a Kubernetes label value, since the ids come from `tollgate.dev/workflow` and
// `tollgate.dev/service` labels. It also rules out `.`, `..`, `/` and `:` in a path or Redis key.
export const WORKFLOW_ID_PATTERN = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const idSchema = (what: string) =>
  z
    .string()
    .regex(
      WORKFLOW_ID_PATTERN,
      `a ${what} id is 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
    );

export const workflowServiceSchema = z.strictObject({
  workflow: idSchema('workflow'),
  service: idSchema('service'),
  url: z.url({ protocol: /^https?$/, error: 'url must be an http:// or https:// base URL of the service' }),
  owner: z.string().min(1).max(255),
  source: z.string().min(1).max(255).optional(),
});
export type WorkflowService = z.infer<typeof workflowServiceSchema>;

export interface OwnedWorkflow {
  workflow: string;
  services: string[];
}

const BDA_ROUTE_PREFIX = `${KEY_PREFIX}route:bda:`;
const SCAN_COUNT = 1000;

export class WorkflowRoutes {
  constructor(private readonly redis: Redis) {}

  /**
   * Registers (or updates) one workflow service. A workflow belongs to one owner: a service cannot
   * be added to another owner's workflow, or its keys would reach services they do not own.
   */
  async register(input: WorkflowService): Promise<void> {
    const service = workflowServiceSchema.parse(input);
    const others = (await this.routesOf(service.workflow)).filter(
      (r) => r.service !== service.service && r.route.owner !== service.owner,
    );
    if (others.length > 0) {
      throw new TollgateError(
        409,
        'workflow_owned_by_another_user',
        `workflow ${service.workflow} belongs to another owner; choose another workflow id`,
        { field: 'workflow' },
      );
    }
    const key = redisKeys.bdaRoute(service.workflow, service.service);
    const route: Route = { url: service.url, owner: service.owner, workflow: service.workflow };
    if (service.source !== undefined) route.source = service.source;
    await this.exec(this.redis.multi().set(key, JSON.stringify(route)).publish(redisChannels.routes, key));
  }

  /** Removes one workflow service; false if it was not registered. */
  async remove(workflow: string, service: string): Promise<boolean> {
    const key = redisKeys.bdaRoute(workflow, service);
    const results = await this.exec(this.redis.multi().del(key).publish(redisChannels.routes, key));
    return results[0]?.[1] === 1;
  }

  /** The workflows every service of which belongs to `owner`, with their services, sorted. */
  async ownedBy(owner: string): Promise<OwnedWorkflow[]> {
    const byWorkflow = new Map<string, { services: string[]; allOwned: boolean }>();
    for (const { workflow, service, route } of await this.scan(`${BDA_ROUTE_PREFIX}*`)) {
      const entry = byWorkflow.get(workflow) ?? { services: [], allOwned: true };
      entry.services.push(service);
      entry.allOwned &&= route.owner === owner;
      byWorkflow.set(workflow, entry);
    }
    return [...byWorkflow]
      .filter(([, e]) => e.allOwned)
      .map(([workflow, e]) => ({ workflow, services: e.services.sort() }))
      .sort((a, b) => (a.workflow < b.workflow ? -1 : 1));
  }

  private routesOf(workflow: string): Promise<Array<{ service: string; route: Route }>> {
    return this.scan(`${BDA_ROUTE_PREFIX}${workflow}:*`);
  }

  private async scan(pattern: string): Promise<Array<{ workflow: string; service: string; route: Route }>> {
    const found: Array<{ workflow: string; service: string; route: Route }> = [];
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
          found.push({ workflow, service, route: JSON.parse(value) as Route });
        });
      } while (cursor !== '0');
    } catch (cause) {
      throw unavailable(cause);
    }
    return found;
  }

  private async exec(multi: ReturnType<Redis['multi']>): Promise<Array<[Error | null, unknown]>> {
    let results: Array<[Error | null, unknown]> | null;
    try {
      results = await multi.exec();
    } catch (cause) {
      throw unavailable(cause);
    }
    const failed = results?.find(([err]) => err !== null)?.[0];
    if (results === null || failed) throw unavailable(failed);
    return results;
  }
}

const unavailable = (cause: unknown): TollgateError =>
  new TollgateError(
    503,
    'redis_unavailable',
    'the route table in Redis cannot be reached; retry when Redis is back',
    {
      cause,
    },
  );
