import { connectRedis } from '../../common/redis/connect.js';
import cluster from 'node:cluster';
import { KubeConfig } from '@kubernetes/client-node';
import type { Command } from 'commander';
import type { Redis } from 'ioredis';
import { isTollgateError } from '../../common/errors.js';
import { stopOnSignals } from '../stop-on-signals.js';
import { createLogger } from '../../common/logger.js';
import { KubeWorkflowRecords } from '../../common/routes/workflow-records.js';
import { WorkflowRoutes } from '../../common/routes/workflow-routes.js';
import { loadGatewayConfig, type GatewayConfigInput } from '../../gateway/config.js';
import { parseUpstreamList } from '../../gateway/config/sources.js';
import { webhookSettingsOf } from '../../gateway/config/webhook-settings.js';
import { usageExportOf } from '../../gateway/usage-export/settings.js';
import { createManagement } from '../../gateway/api/management.js';
import type { GatewayConfig } from '../../gateway/config.js';
import { modelsPlatformResource } from '../../gateway/platform/models/index.js';
import { type SharedServices } from '../../gateway/services.js';
import { kubeModels } from '../../gateway/v2/model-directory.js';
import type { Logger } from '../../common/logger.js';
import { buildCentralGateway } from '../../gateway/central-gateway.js';

interface GatewayFlags {
  config?: string;
  host?: string;
  port?: string;
  grpcPort?: string;
  redisUrl?: string;
  upstream: string[];
  workers: string;
}

/** `tollgate gateway`: the key-checking gateway. */
export function register(program: Command): void {
  program
    .command('gateway')
    .description(
      'Run the gateway on a cluster: key checks and routing for /events, V2 inference, and (with OIDC ' +
        'configured) the management API. `tollgate dev` runs the standalone variant.',
    )
    .option('-c, --config <file>', 'YAML or JSON settings file (also TOLLGATE_CONFIG)')
    .option('--host <host>', 'address to listen on (TOLLGATE_HOST, default 0.0.0.0)')
    .option('-p, --port <port>', 'port to listen on (TOLLGATE_PORT, default 8080)')
    .option('--grpc-port <port>', 'port of V2 inference over gRPC (TOLLGATE_GRPC_PORT; none by default)')
    .option('--redis-url <url>', 'Redis holding the key index and routes (TOLLGATE_REDIS_URL)')
    .option(
      '--upstream <resource=url>',
      'a platform resource and its upstream; repeatable (TOLLGATE_UPSTREAMS=a=url,b=url)',
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .option('--workers <n>', 'worker processes sharing the port (Node cluster)', '1')
    .action(async (flags: GatewayFlags) => {
      const log = createLogger('gateway');
      const overrides: Partial<GatewayConfigInput> = {};
      if (flags.host !== undefined) overrides.host = flags.host;
      if (flags.port !== undefined) overrides.port = flags.port;
      if (flags.grpcPort !== undefined) overrides.grpcPort = flags.grpcPort;
      if (flags.redisUrl !== undefined) overrides.redisUrl = flags.redisUrl;
      if (flags.upstream.length > 0) overrides.upstreams = parseUpstreamList(flags.upstream.join(','));
      try {
        const config = loadGatewayConfig({ file: flags.config, overrides });
        const workers = Number(flags.workers);
        if (!Number.isInteger(workers) || workers < 1)
          throw new Error('--workers must be a positive integer');
        if (workers > 1 && cluster.isPrimary) {
          superviseWorkers(workers, log);
          return;
        }
        const kubeConfig = new KubeConfig();
        kubeConfig.loadFromDefault();
        // One connection and one workflow route table for the management API and the models
        // resource (fail fast: an edit waits for no reconnect).
        const editRedis = connectRedis(config.redisUrl, {
          maxRetriesPerRequest: 1,
          connectionName: 'tollgate-edit',
        });
        editRedis.on('error', (err: Error) => log.warn({ err: err.message }, 'redis error (management)'));
        // Who owns each workflow: the Workflow records, as the operator routes by.
        const records = new KubeWorkflowRecords(kubeConfig);
        const gateway = await buildCentralGateway(config, log, {
          models: kubeModels(kubeConfig),
          management: (shared) =>
            clusterManagement(
              config,
              shared,
              kubeConfig,
              log,
              editRedis,
              new WorkflowRoutes(editRedis, shared.trust.verifier, records),
            ),
          platformResources: ({ trust }) =>
            new Map([
              [
                'models',
                modelsPlatformResource({
                  workflows: new WorkflowRoutes(editRedis, trust.verifier, records),
                  log,
                  models: { kubeConfig, namespace: config.namespace },
                }),
              ],
            ]),
        });
        const address = await gateway.listen(config.port, config.host);
        const grpcPort =
          config.grpcPort === undefined ? undefined : await gateway.listenGrpc(config.grpcPort, config.host);
        log.info(
          {
            host: address.address,
            port: address.port,
            grpcPort,
            extAuthzPort: gateway.extAuthzPort(),
            metricsPort: gateway.metricsAddress()?.port,
            pid: process.pid,
          },
          'gateway listening',
        );
        stopOnSignals(log, 'gateway', () => gateway.shutdown());
      } catch (err) {
        log.error({ code: isTollgateError(err) ? err.code : undefined }, (err as Error).message);
        process.exit(1);
      }
    });
}

/**
 * On a cluster, keys are ApiKey resources in the configured namespace and users are those of the
 * configured OIDC provider. Without OIDC settings nobody could be identified, so the management
 * API is left out (and says so) rather than served open.
 */
async function clusterManagement(
  config: GatewayConfig,
  { roles, audit, trust, proxies, shareRefused }: SharedServices,
  kubeConfig: KubeConfig,
  log: Logger,
  redis: Redis,
  workflows: WorkflowRoutes,
) {
  if (config.oidc === undefined) {
    log.warn('no OIDC settings (oidc.issuer, oidc.audience): the management API is not served');
    return undefined;
  }
  return createManagement({
    redis,
    workflows,
    log,
    roles,
    audit,
    maxRollGraceSeconds: config.maxRollGraceSeconds,
    maxKeysPerOwner: config.maxKeysPerOwner,
    managementCallsPerSecond: config.managementCallsPerSecond,
    keys: { kubeConfig, namespace: config.namespace },
    identity: { oidc: config.oidc },
    admin: { groupsClaim: config.groupsClaim, adminGroups: config.adminGroups },
    leakReports: { keysUrl: config.leakReportKeysUrl, action: config.leakReportAction },
    webhooks: webhookSettingsOf(config),
    usageExport: usageExportOf(config),
    trust,
    proxies,
    shareRefused,
  });
}

/** The primary of a cluster: forks workers, replaces crashed ones, and relays shutdown. */
function superviseWorkers(count: number, log: ReturnType<typeof createLogger>): void {
  let stopping = false;
  for (let i = 0; i < count; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    log.error({ pid: worker.process.pid, code, signal }, 'gateway worker died; starting another');
    cluster.fork();
  });
  const stop = (): void => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
