import type { Command } from 'commander';
import { z } from 'zod';
import { isTollgateError } from '../../common/errors.js';
import { stopOnSignals } from '../stop-on-signals.js';
import { createLogger } from '../../common/logger.js';
import { WORKFLOW_ID_PATTERN } from '../../common/resources/workflow-service.js';
import { loadGatewayConfig, type GatewayConfigInput } from '../../gateway/config.js';
import { createGatewayServices } from '../../gateway/services.js';
import { GrantVerifier } from '../../gateway/auth/signed-grant.js';
import { createSidecar } from '../../gateway/sidecar/sidecar.js';

const id = (what: string) =>
  z.string().regex(WORKFLOW_ID_PATTERN, `--${what}: 1 to 63 letters, digits, '-', '_' or '.'`);

const flagsSchema = z.object({
  upstream: z.url({ protocol: /^https?$/, error: '--upstream must be an http:// or https:// URL' }),
  workflow: id('workflow'),
  service: id('service'),
  host: z.string().min(1),
  port: z.coerce.number().int().min(0).max(65535),
  operationsPort: z.coerce.number().int().min(0).max(65535),
  grantKeys: z.string().min(1).optional(),
  redisUrl: z
    .url({ protocol: /^rediss?$/, error: '--redis-url must be a redis:// or rediss:// URL' })
    .optional(),
});

/**
 * `tollgate sidecar`: the gateway in front of one workload, checking every call's key for the
 * workload's workflow (gateway/sidecar/). Beside a local process, or as the container the sidecar
 * placement adds to a pod.
 */
export function register(program: Command): void {
  program
    .command('sidecar')
    .description('Guard one workload: every call needs a bda key of its workflow (the gateway as a sidecar)')
    .requiredOption('--upstream <url>', 'where the workload listens, e.g. http://127.0.0.1:9000')
    .requiredOption('--workflow <id>', 'the workflow the workload belongs to (its keys pass)')
    .requiredOption('--service <id>', 'the service id of the workload inside the workflow')
    .option('--host <host>', 'address to listen on', process.env.TOLLGATE_HOST ?? '0.0.0.0')
    .option('-p, --port <port>', 'port of the workload’s traffic', process.env.TOLLGATE_PORT ?? '8080')
    .option('--operations-port <port>', 'port of /healthz, /readyz and /metrics', '9091')
    .option('--redis-url <url>', 'Redis holding the key index (TOLLGATE_REDIS_URL)')
    .option(
      '--grant-keys <file>',
      'the central gateway’s grant keys (JWKS); calls it signed a grant for pass without a Redis lookup',
    )
    .action(async (raw: unknown) => {
      const log = createLogger('sidecar');
      const parsed = flagsSchema.safeParse(raw);
      if (!parsed.success) {
        process.stderr.write(`tollgate sidecar: ${parsed.error.issues[0]?.message ?? 'invalid flags'}\n`);
        process.exit(2);
      }
      const flags = parsed.data;
      try {
        const overrides: Partial<GatewayConfigInput> = { host: flags.host, port: flags.port };
        if (flags.redisUrl !== undefined) overrides.redisUrl = flags.redisUrl;
        const config = loadGatewayConfig({ overrides });
        const services = await createGatewayServices(config, log);
        const target = {
          upstream: new URL(flags.upstream),
          workflow: flags.workflow,
          service: flags.service,
        };
        const grants =
          flags.grantKeys === undefined
            ? undefined
            : await GrantVerifier.fromJwksFile(flags.grantKeys, flags.workflow, flags.service);
        const sidecar = createSidecar(services, target, grants);
        const address = await sidecar.traffic.listen(config.port, config.host);
        const operations = sidecar.operations.listen(flags.operationsPort, config.host);
        await new Promise((resolve, reject) => {
          operations.once('listening', resolve);
          operations.once('error', reject);
        });
        log.info(
          {
            port: address.port,
            operationsPort: (operations.address() as { port: number }).port,
            upstream: flags.upstream,
            workflow: flags.workflow,
            service: flags.service,
          },
          'sidecar listening',
        );
        stopOnSignals(log, 'sidecar', () => {
          operations.close();
          return sidecar.traffic.shutdown();
        });
      } catch (err) {
        log.error({ code: isTollgateError(err) ? err.code : undefined }, (err as Error).message);
        process.exit(1);
      }
    });
}
