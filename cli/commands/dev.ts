import { connectRedis, redisUrlSchema } from '../../common/redis/connect.js';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Option, type Command } from 'commander';
import { deprecatedEnv } from '../deprecated-env.js';
import { z } from 'zod';
import { isTollgateError } from '../../common/errors.js';
import { createLogger } from '../../common/logger.js';
import { ManifestDir } from '../../common/resources/manifest-dir.js';
import { MODEL_PLURAL, modelSchema, type Model } from '../../common/resources/model.js';
import { createManagement } from '../../gateway/api/management.js';
import { ManifestWorkflowRecords } from '../../common/routes/workflow-records.js';
import { WorkflowRoutes } from '../../common/routes/workflow-routes.js';
import { loadGatewayConfig, type GatewayConfigInput } from '../../gateway/config.js';
import { webhookSettingsOf } from '../../gateway/config/webhook-settings.js';
import { usageExportOf } from '../../gateway/usage-export/settings.js';
import { modelsPlatformResource } from '../../gateway/platform/models/index.js';
import { manifestModels } from '../../gateway/v2/model-directory.js';
import { OperatorManager } from '../../operator/manager.js';
import { standaloneSources } from '../../operator/standalone-sources.js';
import { LocalMlserverDriver } from '../../operator/serving/local-mlserver.js';
import { ProcessEnvCredentials } from '../../operator/storage/credentials.js';
import { openKeyFile, publicJwk } from '../../common/crypto/key-file.js';
import { mkdir, writeFile } from 'node:fs/promises';
import { buildCentralGateway } from '../../gateway/central-gateway.js';

const flagsSchema = z.object({
  stateDir: z.string().min(1),
  host: z.string().min(1),
  port: z.coerce.number().int().min(0).max(65535),
  grpcPort: z.coerce.number().int().min(0).max(65535).optional(),
  redisUrl: redisUrlSchema,
  mlserver: z.string().min(1),
});

/**
 * `tollgate dev`: the embedded default. The gateway and the operator in one process, on one
 * machine: Models, ApiKeys and workflow Services are manifests in the state directory
 * (`<state-dir>/models/`, `apikeys/`, `services/`), each Model is served by a local MLServer
 * process, and Redis is a local redis-server. The same code as on a cluster, with the two seams
 * of the design swapped.
 */
export function register(program: Command): void {
  program
    .command('dev')
    .description(
      'Run gateway + operator on this machine: manifests in a directory, MLServer processes as runtimes',
    )
    .addOption(
      new Option('--state-dir <dir>', 'manifests, keys and model folders')
        .env('TOLLGATE_STATE_DIR')
        .default('.tollgate'),
    )
    .addOption(new Option('--host <host>', 'address to listen on').env('TOLLGATE_HOST').default('127.0.0.1'))
    .addOption(new Option('-p, --port <port>', 'gateway port').env('TOLLGATE_PORT').default('8080'))
    .addOption(
      new Option('--grpc-port <port>', 'port of V2 inference over gRPC (none by default)').env(
        'TOLLGATE_GRPC_PORT',
      ),
    )
    .addOption(
      new Option('--redis-url <url>', 'Redis')
        .env('TOLLGATE_REDIS_URL')
        .default(deprecatedEnv('REDIS_URL', 'TOLLGATE_REDIS_URL') ?? 'redis://127.0.0.1:6379'),
    )
    .addOption(
      new Option('--mlserver <path>', 'the mlserver executable')
        .env('TOLLGATE_MLSERVER')
        .default('.venv/bin/mlserver'),
    )
    .action(async (raw: unknown) => {
      const log = createLogger('tollgate-dev');
      const parsed = flagsSchema.safeParse(raw);
      if (!parsed.success) {
        process.stderr.write(`tollgate dev: ${parsed.error.issues[0]?.message ?? 'invalid flags'}\n`);
        process.exit(2);
      }
      const flags = parsed.data;
      const stateDir = path.resolve(flags.stateDir);
      const grantSigningKeyFile = path.join(stateDir, 'grant-signing-key.json');
      try {
        const overrides: Partial<GatewayConfigInput> = {
          host: flags.host,
          port: flags.port,
          ...(flags.grpcPort === undefined ? {} : { grpcPort: flags.grpcPort }),
          redisUrl: flags.redisUrl,
          stateDir,
          // Seals the keys it makes and signs grants for sidecars; the operator below shares it.
          grantSigningKeyFile,
          // The audit trail beside the manifests: a Redis flush leaves both.
          auditUri: process.env.TOLLGATE_AUDIT_URI ?? pathToFileURL(path.join(stateDir, 'audit')).href,
          // Models that log their calls (spec.logging) write them beside it.
          payloadLogUri:
            process.env.TOLLGATE_PAYLOAD_LOG_URI ?? pathToFileURL(path.join(stateDir, 'payload-logs')).href,
          // No load balancer in front of a standalone gateway: nothing to drain towards.
          shutdownDrainMs: 0,
        };
        const config = loadGatewayConfig({ overrides });
        // The public half, for sidecars beside local processes (`tollgate sidecar --trusted-keys`).
        await mkdir(stateDir, { recursive: true });
        await writeFile(
          path.join(stateDir, 'trusted-keys.json'),
          `${JSON.stringify({ keys: [publicJwk(await openKeyFile(grantSigningKeyFile))] })}\n`,
        );
        const manifests = new ManifestDir(stateDir, (file, err) =>
          log.warn({ file, err: (err as Error).message }, 'ignoring an invalid manifest'),
        );
        const models = manifests.collection<Model>(MODEL_PLURAL, modelSchema);

        const runtime = new LocalMlserverDriver({
          mlserver: path.resolve(flags.mlserver),
          workDir: path.join(stateDir, 'runtimes'),
          credentials: new ProcessEnvCredentials(),
          log: log.child({ component: 'runtime' }),
        });
        const operator = new OperatorManager(() => standaloneSources(manifests, runtime, log), {
          redisUrl: flags.redisUrl,
          log: log.child({ component: 'operator' }),
          signingKey: () => openKeyFile(grantSigningKeyFile),
        });

        const selfUrl = `http://${flags.host === '0.0.0.0' ? '127.0.0.1' : flags.host}:${flags.port}`;
        const managementRedis = connectRedis(flags.redisUrl, {
          maxRetriesPerRequest: 1,
          connectionName: 'tollgate-dev-management',
        });
        managementRedis.on('error', (err: Error) => log.warn({ err: err.message }, 'redis error'));
        const gateway = await buildCentralGateway(config, log, {
          models: manifestModels(models),
          management: ({ roles, audit, trust, proxies, shareRefused }) =>
            createManagement({
              redis: managementRedis,
              workflows: new WorkflowRoutes(
                managementRedis,
                trust.verifier,
                new ManifestWorkflowRecords(manifests),
              ),
              log,
              roles,
              audit,
              maxRollGraceSeconds: config.maxRollGraceSeconds,
              maxKeysPerOwner: config.maxKeysPerOwner,
              managementCallsPerSecond: config.managementCallsPerSecond,
              keys: { stateDir },
              // A configured provider replaces the local issuer (and the panel offers "Sign in").
              identity: config.oidc === undefined ? { local: { stateDir, selfUrl } } : { oidc: config.oidc },
              admin: { groupsClaim: config.groupsClaim, adminGroups: config.adminGroups },
              leakReports: { keysUrl: config.leakReportKeysUrl, action: config.leakReportAction },
              webhooks: webhookSettingsOf(config),
              usageExport: usageExportOf(config),
              trust,
              proxies,
              shareRefused,
            }),
          platformResources: ({ trust }) =>
            new Map([
              [
                'models',
                modelsPlatformResource({
                  workflows: new WorkflowRoutes(
                    managementRedis,
                    trust.verifier,
                    new ManifestWorkflowRecords(manifests),
                  ),
                  log,
                  models: { stateDir },
                }),
              ],
            ]),
        });
        const address = await gateway.listen(config.port, config.host);
        const grpcPort =
          config.grpcPort === undefined ? undefined : await gateway.listenGrpc(config.grpcPort, config.host);
        await operator.start();
        const metricsAt = gateway.metricsAddress() ?? address;
        log.info(
          {
            url: `http://${address.address}:${address.port}`,
            ...(grpcPort === undefined ? {} : { grpc: `${address.address}:${grpcPort}` }),
            metrics: `http://${metricsAt.address}:${metricsAt.port}/metrics`,
            stateDir,
            panel: `${selfUrl}/panel/`,
          },
          'tollgate dev: gateway and operator running',
        );

        let stopping = false;
        const stop = (signal: string): void => {
          if (stopping) return;
          stopping = true;
          log.info({ signal }, 'stopping: gateway, operator, MLServer processes');
          void (async () => {
            await gateway.shutdown().catch((err: unknown) => log.error({ err }, 'gateway shutdown failed'));
            await operator.stop().catch((err: unknown) => log.error({ err }, 'operator stop failed'));
            await runtime.stop();
            managementRedis.disconnect();
            process.exit(0);
          })();
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      } catch (err) {
        log.error({ code: isTollgateError(err) ? err.code : undefined, err }, (err as Error).message);
        process.exit(1);
      }
    });
}
