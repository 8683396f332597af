import { Option, type Command } from 'commander';
import { deprecatedEnv } from '../deprecated-env.js';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { createLogger } from '../../common/logger.js';
import { loadKubeConfig } from '../../operator/kube-config.js';
import { kubeSources } from '../../operator/kube-sources.js';
import { OperatorManager } from '../../operator/manager.js';
import { OperatorMetrics } from '../../operator/metrics.js';
import { MODEL_GATEWAYS, type ModelGateway } from '../../common/resources/model.js';
import { grantKeySecret } from '../../operator/grant-key.js';
import { openKeyFile } from '../../common/crypto/key-file.js';
import type { SidecarCredentials } from '../../operator/webhook/sidecar-credentials.js';
import { SidecarWebhook } from '../../operator/webhook/sidecar-webhook.js';
import { sidecarPlacement } from '../../operator/webhook/sidecar-placement.js';
import { MetricsServer } from '../../operator/metrics-server.js';
import { passedTracingEnv, tracingFromEnv, tracingSettingsSchema } from '../../common/tracing/settings.js';
import { startTracing } from '../../common/tracing/provider.js';

interface OperatorFlags {
  redisUrl: string;
  namespace?: string;
  kubeconfig?: string;
  pullerImage: string;
  runtimeImage?: string;
  leaderElect: boolean;
  leaseNamespace: string;
  leaseName: string;
  metricsPort: number;
  modelGateway: string;
  grantKeySecret?: string;
  signingKeyFile?: string;
  webhookPort: number;
  webhookService: string;
  webhookSecret: string;
  webhookConfig: string;
  webhookCerts: string;
  webhookCertValidity: string;
  webhookExcludeNamespaces: string;
  sidecarRedisUrl?: string;
}

const MS = { h: 3_600_000, m: 60_000, s: 1000, d: 86_400_000 } as const;

/** `90d`, `12h`, `30m`, `45s` as milliseconds. */
function duration(flag: string, value: string): number {
  const m = /^(\d+)([dhms])$/.exec(value);
  if (!m) {
    process.stderr.write(`tollgate operator: ${flag} must be a number and a unit (d, h, m, s), e.g. 90d\n`);
    process.exit(2);
  }
  return Number(m[1]) * MS[m[2] as keyof typeof MS];
}

/** `tollgate operator`: reconciles Models, ApiKeys and workflow Services on a cluster. */
export function register(program: Command): void {
  program
    .command('operator')
    .description('run the operator against the Kubernetes API server (in-cluster or a kubeconfig)')
    .addOption(
      new Option('--redis-url <url>', 'Redis holding the key index and the route table')
        .env('TOLLGATE_REDIS_URL')
        .default(deprecatedEnv('REDIS_URL', 'TOLLGATE_REDIS_URL') ?? 'redis://127.0.0.1:6379'),
    )
    .addOption(
      new Option('--namespace <ns>', 'watch only this namespace (default: all)')
        .env('TOLLGATE_WATCH_NAMESPACE')
        .default(deprecatedEnv('WATCH_NAMESPACE', 'TOLLGATE_WATCH_NAMESPACE')),
    )
    .option('--kubeconfig <path>', 'kubeconfig (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)')
    .addOption(
      new Option('--puller-image <image>', 'the Tollgate image that runs `tollgate pull` in model pods')
        .env('TOLLGATE_IMAGE')
        .default('tollgate:0.1.0'),
    )
    .addOption(
      new Option(
        '--runtime-image <image>',
        'the MLServer image of Models that name none (default: seldonio/mlserver:1.7.1-sklearn, -mlflow for MLflow folders)',
      ).env('TOLLGATE_RUNTIME_IMAGE'),
    )
    .option('--no-leader-elect', 'run without the leader Lease (a single replica only)')
    .addOption(
      new Option(
        '--lease-namespace <ns>',
        'the operator’s own namespace: its leader Lease, its Secrets, and where ApiKeys are believed',
      )
        .env('TOLLGATE_NAMESPACE')
        .default(process.env.POD_NAMESPACE ?? 'default'),
    )
    .option('--lease-name <name>', 'name of the leader Lease', 'tollgate-operator')
    .option('--metrics-port <port>', 'serves /metrics, /healthz and /readyz', (v) => Number(v), 9090)
    .option(
      '--model-gateway <where>',
      'where Models without spec.gateway are checked: central or sidecar',
      'central',
    )
    .option(
      '--grant-key-secret <name>',
      'Secret (in the operator’s namespace) with the signing key shared with the central gateways; made if missing',
    )
    .option(
      '--signing-key-file <path>',
      'the signing key as a file instead of a Secret (made on first use; an operator outside the cluster)',
    )
    .option(
      '--webhook-port <port>',
      'HTTPS port of the sidecar injection webhook (0: no webhook)',
      (v) => Number(v),
      0,
    )
    .option(
      '--webhook-service <name>',
      'the Service in front of the webhook (its certificate’s name)',
      'tollgate-webhook',
    )
    .option('--webhook-secret <name>', 'Secret holding the webhook’s certificates', 'tollgate-webhook-tls')
    .option(
      '--webhook-config <name>',
      'MutatingWebhookConfiguration whose caBundle to keep',
      'tollgate-sidecar',
    )
    .option(
      '--webhook-certs <who>',
      'self: the operator issues and rotates them; external: cert-manager does',
      'self',
    )
    .option('--webhook-cert-validity <duration>', 'validity of the certificates the operator issues', '90d')
    .option(
      '--webhook-exclude-namespaces <list>',
      'comma-separated namespaces the webhook configuration leaves out, besides its own: a review naming one is refused',
      '',
    )
    .option(
      '--sidecar-redis-url <url>',
      'Redis URL injected sidecars use (an ACL user with the sidecar rules; may name $(TOLLGATE_REDIS_PASSWORD)); without it, no pod is injected',
    )
    .action(async (flags: OperatorFlags) => {
      const log = createLogger('operator');
      const tracingSettings = tracingSettingsSchema.safeParse(tracingFromEnv(process.env));
      if (!tracingSettings.success) {
        const issue = tracingSettings.error.issues[0];
        process.stderr.write(
          `tollgate operator: tracing setting ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}\n`,
        );
        process.exit(2);
      }
      const tracing = await startTracing(tracingSettings.data, 'tollgate-operator', log);
      const kc = loadKubeConfig(flags.kubeconfig);
      const metrics = new OperatorMetrics({ defaultMetrics: true });
      if (!(MODEL_GATEWAYS as readonly string[]).includes(flags.modelGateway)) {
        process.stderr.write(`tollgate operator: --model-gateway must be central or sidecar\n`);
        process.exit(2);
      }
      if (flags.webhookCerts !== 'self' && flags.webhookCerts !== 'external') {
        process.stderr.write(`tollgate operator: --webhook-certs must be self or external\n`);
        process.exit(2);
      }
      const ownNamespace = flags.leaseNamespace;
      const excludedNamespaces = flags.webhookExcludeNamespaces.split(',').filter((n) => n !== '');
      const signingKeyFile = flags.signingKeyFile;
      // Every index entry and route is sealed with it: no operator runs without one.
      const signingKey =
        flags.grantKeySecret !== undefined
          ? grantKeySecret(kc, ownNamespace, flags.grantKeySecret)
          : signingKeyFile !== undefined
            ? () => openKeyFile(signingKeyFile)
            : undefined;
      if (signingKey === undefined) {
        process.stderr.write(
          'tollgate operator: the signing key is needed (--grant-key-secret <name>, or --signing-key-file <path>)\n',
        );
        process.exit(2);
      }
      // Made before leading: the gateway pods mount it and wait for it.
      const stored = await signingKey().catch((err: unknown) => {
        log.warn({ err }, 'signing key not ready yet');
        return undefined;
      });
      const manager = new OperatorManager(
        () =>
          kubeSources(kc, log, {
            pullerImage: flags.pullerImage,
            ownNamespace,
            keysNamespace: ownNamespace,
            ...(flags.namespace ? { namespace: flags.namespace } : {}),
          }),
        {
          redisUrl: flags.redisUrl,
          log,
          metrics,
          ...(tracing === undefined ? {} : { tracer: tracing.tracer }),
          ...(flags.namespace ? { namespace: flags.namespace } : {}),
          keysNamespace: ownNamespace,
          ...(flags.runtimeImage ? { runtimeImage: flags.runtimeImage } : {}),
          modelGateway: flags.modelGateway as ModelGateway,
          sidecarPlacement: sidecarPlacement(
            flags.webhookPort > 0 ? { ownNamespace, excluded: excludedNamespaces } : undefined,
          ),
          signingKey,
          ...(flags.leaderElect
            ? {
                leaderElection: {
                  kc,
                  options: {
                    namespace: flags.leaseNamespace,
                    name: flags.leaseName,
                    identity: `${process.env.POD_NAME ?? hostname()}-${randomBytes(4).toString('hex')}`,
                  },
                },
              }
            : {}),
        },
      );
      manager.add(new MetricsServer(flags.metricsPort, metrics));
      if (flags.webhookPort > 0) {
        if (stored === undefined) {
          // A sidecar injected without the public keys could believe nothing: injection waits.
          log.error('the sidecar webhook needs the signing key to tell sidecars what to trust; restarting');
          process.exit(1);
        }
        manager.add(
          new SidecarWebhook(
            kc,
            {
              port: flags.webhookPort,
              image: flags.pullerImage,
              ...(flags.sidecarRedisUrl === undefined ? {} : { sidecarRedisUrl: flags.sidecarRedisUrl }),
              ...(process.env.TOLLGATE_IMAGE_PULL_POLICY
                ? { imagePullPolicy: process.env.TOLLGATE_IMAGE_PULL_POLICY }
                : {}),
              credentials: sidecarCredentials(process.env) ?? {},
              tracingEnv: passedTracingEnv(process.env),
              signingKey: stored,
              excludedNamespaces,
              certificates: {
                namespace: ownNamespace,
                secret: flags.webhookSecret,
                service: flags.webhookService,
                webhookConfiguration: flags.webhookConfig,
                issue: flags.webhookCerts === 'self',
                validityMs: duration('--webhook-cert-validity', flags.webhookCertValidity),
              },
            },
            log,
            metrics,
          ),
        );
      }
      const shutdown = async (signal: string) => {
        log.info({ signal }, 'shutting down');
        await manager.stop();
        await tracing?.shutdown();
        kc.close();
        process.exit(0);
      };
      process.once('SIGTERM', () => void shutdown('SIGTERM'));
      process.once('SIGINT', () => void shutdown('SIGINT'));
      await manager.start();
      // The first index build (once this replica leads) runs at full speed; after it the operator
      // mostly holds a compact copy of every ApiKey, and V8's memory-first heap sizing brings it
      // down to what it holds (make bench ARGS=scale, 100,000 keys: settled RSS 398 -> 217 MiB;
      // set from the start instead, it made the build 12.7 -> 15.3 s).
      void manager.firstBuild.then(() => setFlagsFromString('--optimize-for-size'));
      log.info({ namespace: flags.namespace ?? '(all)', leaderElect: flags.leaderElect }, 'operator started');
    });
}

/**
 * The sidecar's Redis password (and the Sentinels' client password), from the operator's own
 * environment (the chart reads them from the Redis auth Secret): the names the injected sidecar
 * reads them under, with their values. None: sidecars get the URL as it is.
 */
function sidecarCredentials(env: NodeJS.ProcessEnv): SidecarCredentials | undefined {
  const password = env.TOLLGATE_SIDECAR_REDIS_PASSWORD;
  if (password === undefined || password === '') return undefined;
  const sentinel = env.TOLLGATE_SIDECAR_REDIS_SENTINEL_PASSWORD;
  return {
    TOLLGATE_REDIS_PASSWORD: password,
    ...(sentinel === undefined || sentinel === '' ? {} : { TOLLGATE_REDIS_SENTINEL_PASSWORD: sentinel }),
  };
}
