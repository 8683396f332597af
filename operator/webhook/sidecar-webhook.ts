import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../common/logger.js';
import { publicJwk, type StoredKey } from '../../common/crypto/key-file.js';
import type { Runnable } from '../framework/runnable.js';
import { workflowRecords } from '../kube-sources.js';
import type { OperatorMetrics } from '../metrics.js';
import { WorkflowAdmission } from '../workflows/workflow-admission.js';
import { CertificateKeeper, type CertificateKeeperOptions } from './certificate-keeper.js';
import {
  credentialEnv,
  namespaceReportKey,
  REPORT_KEY_ENV,
  SidecarCredentialKeeper,
  type SidecarCredentials,
} from './sidecar-credentials.js';
import { WebhookServer } from './server.js';

export interface SidecarWebhookConfig {
  port: number;
  /** The image the injected sidecar runs (the operator's own). */
  image: string;
  imagePullPolicy?: string;
  /** The Redis URL injected sidecars use (the sidecar ACL user; may name $(TOLLGATE_REDIS_PASSWORD)). */
  sidecarRedisUrl?: string;
  /** The sidecar user's password(s), under the names the sidecar reads them by. */
  credentials: SidecarCredentials;
  /** The signing key: its public half is what sidecars trust; each namespace's report key derives from it. */
  signingKey: StoredKey;
  /** Where its serving certificates live, and whether it issues and rotates them (self) or only loads them. */
  certificates: Omit<CertificateKeeperOptions, 'checkMs'>;
  /** Namespaces the webhook configuration leaves out, besides its own (certificates.namespace). */
  excludedNamespaces?: readonly string[];
  /** What injected sidecars are told of tracing (the operator's own OTEL_* settings). */
  tracingEnv?: Array<{ name: string; value: string }>;
}

/**
 * The sidecar injection webhook with what it needs: its serving certificates (kept and rotated),
 * the Workflow records it checks pods against, and each guarded namespace's sidecar Secret. Every
 * replica serves it, leader or not: injection must not pause while the Lease moves.
 */
export class SidecarWebhook implements Runnable {
  readonly name = 'sidecar-webhook';
  readonly needsLeader = false;
  private readonly server: WebhookServer;
  private readonly certificates: CertificateKeeper;
  private readonly records: ReturnType<WorkflowAdmission['watch']>;
  private recordsSynced = false;

  constructor(
    kc: KubeConfig,
    private readonly config: SidecarWebhookConfig,
    private readonly log: Logger,
    metrics: OperatorMetrics,
  ) {
    const { credentials, signingKey } = config;
    // The sidecar ACL user's credential (the chart's bundled Redis) and the namespace's own
    // load-report key, put into each guarded pod's namespace and read from there: never a plain
    // value in the pod spec.
    const keeper = new SidecarCredentialKeeper(kc, (namespace) => ({
      ...credentials,
      [REPORT_KEY_ENV]: namespaceReportKey(signingKey, namespace),
    }));
    // The webhook's own view of the Workflow records. Until it has synced, the check passes: the
    // Service reconciler still routes nothing the record does not admit.
    const admission = new WorkflowAdmission(workflowRecords(kc, log));
    this.records = admission.watch(() => []);
    const excluded = new Set([config.certificates.namespace, ...(config.excludedNamespaces ?? [])]);
    this.server = new WebhookServer(
      config.port,
      {
        image: config.image,
        redisUrl: config.sidecarRedisUrl,
        credentialEnv: credentialEnv([...Object.keys(credentials), REPORT_KEY_ENV]),
        trustedKeys: JSON.stringify({ keys: [publicJwk(signingKey)] }),
        ...(config.tracingEnv === undefined ? {} : { tracingEnv: config.tracingEnv }),
        ...(config.imagePullPolicy ? { imagePullPolicy: config.imagePullPolicy } : {}),
      },
      log.child({ component: 'webhook' }),
      metrics,
      (namespace) => keeper.ensure(namespace),
      (workflow, namespace) => {
        if (!this.recordsSynced) return undefined;
        const admitted = admission.admit(workflow, namespace);
        return admitted.admitted ? undefined : admitted.message;
      },
      excluded,
    );
    this.certificates = new CertificateKeeper(
      kc,
      { ...config.certificates, checkMs: 10_000 },
      (tls) => this.server.useCertificates(tls),
      log.child({ component: 'webhook-certs' }),
      metrics,
    );
  }

  async start(): Promise<void> {
    this.records
      .start(() => undefined)
      .then(
        () => (this.recordsSynced = true),
        (err: unknown) =>
          this.log.warn({ err }, 'the webhook cannot read Workflow records; not checking them'),
      );
    this.certificates.start();
  }

  async stop(): Promise<void> {
    await this.certificates.stop();
    await this.server.close();
    await this.records.stop();
  }
}
