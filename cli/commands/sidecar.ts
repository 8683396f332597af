import { readFileSync } from 'node:fs';
import { redisUrlSchema } from '../../common/redis/connect.js';
import type { Command } from 'commander';
import { z } from 'zod';
import { isTollgateError } from '../../common/errors.js';
import { stopOnSignals } from '../stop-on-signals.js';
import { createLogger } from '../../common/logger.js';
import { WORKFLOW_ID_PATTERN } from '../../common/resources/workflow-service.js';
import { loadGatewayConfig, type GatewayConfigInput } from '../../gateway/config.js';
import { createGatewayServices } from '../../gateway/services.js';
import { createSidecar, type SidecarTarget } from '../../gateway/sidecar/sidecar.js';
import { APP_PROBES_ENV, parseAppProbes } from '../../common/sidecar-probes.js';
import { guardIpv6, guardsAPod } from '../../gateway/sidecar/ipv6-guard.js';
import { isModelName } from '../../common/resources/model-name.js';
import { keepWasmBaseline } from '../../gateway/sidecar/memory.js';

const id = (what: string) =>
  z.string().regex(WORKFLOW_ID_PATTERN, `--${what}: 1 to 63 letters, digits, '-', '_' or '.'`);

const flagsSchema = z
  .object({
    upstream: z.url({ protocol: /^https?$/, error: '--upstream must be an http:// or https:// URL' }),
    workflow: id('workflow').optional(),
    service: id('service').optional(),
    model: z
      .string()
      .refine(isModelName, '--model: a model name, model-<id> (lower-case letters, digits and dashes)')
      .optional(),
    modelVersion: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, '--model-version: lower-case letters, digits and dashes')
      .max(20)
      .optional(),
    host: z.string().min(1),
    port: z.coerce.number().int().min(0).max(65535),
    grpcPort: z.coerce.number().int().min(0).max(65535).optional(),
    operationsPort: z.coerce.number().int().min(0).max(65535),
    redisUrl: redisUrlSchema.optional(),
    trustedKeys: z.string().min(1).optional(),
    namespace: z
      .string()
      .regex(
        /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
        '--namespace: a namespace name (lower-case letters, digits and dashes)',
      ),
  })
  .refine((f) => (f.model === undefined) !== (f.service === undefined), {
    error: 'guard either a workflow service (--workflow W --service S) or a model (--model model-<id>)',
  })
  .refine((f) => f.modelVersion === undefined || f.model !== undefined, {
    error: '--model-version needs --model: the model whose version the workload serves',
  })
  .refine((f) => f.grpcPort === undefined || f.model !== undefined, {
    error: '--grpc-port is for a model: V2 inference over gRPC (a workflow service is its own protocol)',
  })
  .refine((f) => f.service === undefined || f.workflow !== undefined, {
    error: '--service needs --workflow: the workflow whose bda keys may call it',
  });

function targetOf(flags: z.infer<typeof flagsSchema>): SidecarTarget {
  const upstream = new URL(flags.upstream);
  if (flags.model !== undefined) {
    return {
      kind: 'model',
      namespace: flags.namespace,
      upstream,
      model: flags.model,
      ...(flags.modelVersion === undefined ? {} : { version: flags.modelVersion }),
      ...(flags.workflow === undefined ? {} : { workflow: flags.workflow }),
    };
  }
  return {
    kind: 'workflow',
    namespace: flags.namespace,
    upstream,
    workflow: flags.workflow ?? '',
    service: flags.service ?? '',
  };
}

/**
 * `tollgate sidecar`: the gateway in front of one workload, a workflow's service or a model's
 * runtime, checking every call's key or the grant the central gateway signed (gateway/sidecar/). Beside a local process, or as the container the sidecar
 * placement adds to a pod.
 */
export function register(program: Command): void {
  program
    .command('sidecar')
    .description(
      'Guard one workload (a workflow service or a model): every call needs a key for it (the gateway as a sidecar)',
    )
    .requiredOption('--upstream <url>', 'where the workload listens, e.g. http://127.0.0.1:9000')
    .option('--workflow <id>', 'the workflow the workload belongs to (its bda keys pass)')
    .option('--service <id>', 'the service id of the workload inside the workflow')
    .option('--model <name>', 'guard a model’s runtime instead: its V2 endpoints, for the keys /v2 takes')
    .option('--model-version <version>', 'the version of the model the runtime serves, if it has versions')
    .option(
      '--host <host>',
      'address to listen on (in a pod: its own IP)',
      process.env.TOLLGATE_HOST ?? '0.0.0.0',
    )
    .option('-p, --port <port>', 'port of the workload’s traffic', process.env.TOLLGATE_PORT ?? '8080')
    .option('--grpc-port <port>', 'a model’s V2 inference over gRPC, on this port too (none by default)')
    .option(
      '--operations-port <port>',
      'port of /healthz, /readyz, /metrics and the workload’s probes',
      '9091',
    )
    .option(
      '--namespace <name>',
      'the workload’s namespace, bound into the grants it takes (in a pod: its own, TOLLGATE_POD_NAMESPACE; standalone: default)',
      process.env.TOLLGATE_POD_NAMESPACE ?? 'default',
    )
    .option('--redis-url <url>', 'Redis holding the key index (TOLLGATE_REDIS_URL)')
    .option(
      '--trusted-keys <file>',
      'the public keys to believe (a JWKS file: `tollgate dev` writes <state-dir>/trusted-keys.json; injected sidecars get TOLLGATE_TRUSTED_KEYS)',
    )
    .action(async (raw: unknown) => {
      keepWasmBaseline();
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
        if (flags.trustedKeys !== undefined) overrides.trustedKeys = readFileSync(flags.trustedKeys, 'utf8');
        const config = loadGatewayConfig({ overrides });
        const services = await createGatewayServices(config, log);
        const sidecar = createSidecar(services, targetOf(flags), {
          probes: parseAppProbes(process.env[APP_PROBES_ENV]),
        });
        const address = await sidecar.traffic.listen(config.port, config.host);
        const inPod = guardsAPod(config.host);
        const v6 = inPod
          ? await guardIpv6((socket) => sidecar.traffic.server.emit('connection', socket), address.port, log)
          : undefined;
        const grpcPort =
          flags.grpcPort === undefined
            ? undefined
            : await sidecar.traffic.listenGrpc(flags.grpcPort, config.host);
        // Its IPv6 addresses held too, as the traffic port's: a runtime cannot answer there unguarded.
        const grpcV6 =
          inPod && grpcPort !== undefined
            ? await guardIpv6((socket) => socket.destroy(), grpcPort, log)
            : undefined;
        const operations = sidecar.operations.listen(flags.operationsPort, config.host);
        await new Promise((resolve, reject) => {
          operations.once('listening', resolve);
          operations.once('error', reject);
        });
        log.info(
          {
            port: address.port,
            grpcPort,
            operationsPort: (operations.address() as { port: number }).port,
            upstream: flags.upstream,
            guards: flags.model ?? `${flags.workflow ?? ''}/${flags.service ?? ''}`,
          },
          'sidecar listening',
        );
        stopOnSignals(log, 'sidecar', () => {
          operations.close();
          v6?.close();
          grpcV6?.close();
          return sidecar.traffic.shutdown();
        });
      } catch (err) {
        log.error({ code: isTollgateError(err) ? err.code : undefined }, (err as Error).message);
        process.exit(1);
      }
    });
}
