import type { Command } from 'commander';
import { createServer } from 'node:http';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../common/logger.js';
import { loadKubeConfig } from '../../operator/kube-config.js';
import { kubeSources } from '../../operator/kube-sources.js';
import { OperatorManager } from '../../operator/manager.js';
import { OperatorMetrics } from '../../operator/metrics.js';

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
}

/** `tollgate operator`: reconciles Models, ApiKeys and workflow Services on a cluster. */
export function register(program: Command): void {
  program
    .command('operator')
    .description('run the operator against the Kubernetes API server (in-cluster or a kubeconfig)')
    .option(
      '--redis-url <url>',
      'Redis holding the key index and the route table',
      process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    )
    .option('--namespace <ns>', 'watch only this namespace (default: all)', process.env.WATCH_NAMESPACE)
    .option('--kubeconfig <path>', 'kubeconfig (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)')
    .option(
      '--puller-image <image>',
      'the Tollgate image that runs `tollgate pull` in model pods',
      process.env.TOLLGATE_IMAGE ?? 'tollgate:0.1.0',
    )
    .option(
      '--runtime-image <image>',
      'the MLServer image of Models that name none (default: seldonio/mlserver:1.7.1-sklearn, -mlflow for MLflow folders)',
      process.env.TOLLGATE_RUNTIME_IMAGE,
    )
    .option('--no-leader-elect', 'run without the leader Lease (a single replica only)')
    .option('--lease-namespace <ns>', 'namespace of the leader Lease', process.env.POD_NAMESPACE ?? 'default')
    .option('--lease-name <name>', 'name of the leader Lease', 'tollgate-operator')
    .option('--metrics-port <port>', 'serves /metrics, /healthz and /readyz', (v) => Number(v), 9090)
    .action(async (flags: OperatorFlags) => {
      const log = createLogger('operator');
      const kc = loadKubeConfig(flags.kubeconfig);
      const metrics = new OperatorMetrics({ defaultMetrics: true });
      const manager = new OperatorManager(
        () =>
          kubeSources(kc, log, {
            pullerImage: flags.pullerImage,
            ...(flags.namespace ? { namespace: flags.namespace } : {}),
          }),
        {
          redisUrl: flags.redisUrl,
          log,
          metrics,
          ...(flags.namespace ? { namespace: flags.namespace } : {}),
          ...(flags.runtimeImage ? { runtimeImage: flags.runtimeImage } : {}),
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
      const server = createServer((req, res) => {
        if (req.url === '/metrics') {
          void metrics.registry
            .metrics()
            .then((text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text));
        } else if (req.url === '/healthz' || req.url === '/readyz') {
          res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
        } else {
          res.writeHead(404).end();
        }
      });
      server.listen(flags.metricsPort);
      const shutdown = async (signal: string) => {
        log.info({ signal }, 'shutting down');
        server.close();
        await manager.stop();
        kc.close();
        process.exit(0);
      };
      process.once('SIGTERM', () => void shutdown('SIGTERM'));
      process.once('SIGINT', () => void shutdown('SIGINT'));
      await manager.start();
      log.info({ namespace: flags.namespace ?? '(all)', leaderElect: flags.leaderElect }, 'operator started');
    });
}
