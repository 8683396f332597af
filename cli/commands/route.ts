import type { Command } from 'commander';
import { Redis } from 'ioredis';
import { z, ZodError } from 'zod';
import { isTollgateError } from '../../common/errors.js';
import { WorkflowRoutes } from '../../common/routes/workflow-routes.js';

interface RedisFlag {
  redisUrl: string;
}

/**
 * `tollgate route add|remove`: registers a workflow service in the route table by hand, for a
 * gateway without a cluster. On Kubernetes the operator does this from labelled Services.
 */
export function register(program: Command): void {
  const route = program
    .command('route')
    .description('Register workflow services in the route table (no cluster needed)');
  const redisOption = [
    '--redis-url <url>',
    'Redis holding the route table (TOLLGATE_REDIS_URL)',
    process.env.TOLLGATE_REDIS_URL ?? 'redis://127.0.0.1:6379',
  ] as const;

  route
    .command('add')
    .description('Route /events/bda/<workflow>/<service>/... to a service URL, owned by a user')
    .requiredOption('--workflow <id>', 'the workflow id (a bda key’s role)')
    .requiredOption('--service <id>', 'the service id inside the workflow')
    .requiredOption('--url <url>', 'base URL of the service, e.g. http://127.0.0.1:9000')
    .requiredOption('--owner <subject>', 'the user who owns the workflow (their token subject)')
    .option(...redisOption)
    .action((flags: RedisFlag & { workflow: string; service: string; url: string; owner: string }) =>
      withRoutes(flags, async (routes) => {
        await routes.register({
          workflow: flags.workflow,
          service: flags.service,
          url: flags.url,
          owner: flags.owner,
          source: 'manual',
        });
        process.stdout.write(
          `routed /events/bda/${flags.workflow}/${flags.service}/ to ${flags.url} (owner ${flags.owner})\n`,
        );
      }),
    );

  route
    .command('remove')
    .description('Remove a workflow service from the route table')
    .requiredOption('--workflow <id>', 'the workflow id')
    .requiredOption('--service <id>', 'the service id')
    .option(...redisOption)
    .action((flags: RedisFlag & { workflow: string; service: string }) =>
      withRoutes(flags, async (routes) => {
        if (!(await routes.remove(flags.workflow, flags.service))) {
          throw new Error(`no route for workflow ${flags.workflow}, service ${flags.service}`);
        }
        process.stdout.write(`removed /events/bda/${flags.workflow}/${flags.service}/\n`);
      }),
    );
}

async function withRoutes(flags: RedisFlag, fn: (routes: WorkflowRoutes) => Promise<void>): Promise<void> {
  const url = z.url({ protocol: /^rediss?$/ }).safeParse(flags.redisUrl);
  if (!url.success) return fail('--redis-url must be a redis:// or rediss:// URL');
  const redis = new Redis(url.data, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    try {
      await redis.connect();
    } catch {
      return fail(`cannot reach Redis at ${url.data}; start it or pass --redis-url`);
    }
    await fn(new WorkflowRoutes(redis));
  } catch (e) {
    if (e instanceof ZodError)
      return fail(`${e.issues[0]?.path.join('.') ?? ''}: ${e.issues[0]?.message ?? 'invalid'}`);
    return fail(isTollgateError(e) || e instanceof Error ? e.message : String(e));
  } finally {
    redis.disconnect();
  }
}

function fail(message: string): void {
  process.stderr.write(`tollgate route: ${message}\n`);
  process.exitCode = 1;
}
