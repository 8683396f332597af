import { CoreV1Api, type KubeConfig, type V1EnvVar } from '@kubernetes/client-node';
import type { StoredKey } from '../../common/crypto/key-file.js';
import { isApiStatus } from '../../common/kube/custom-objects.js';
import { reportKey } from '../../common/redis/load-reports.js';

/**
 * The sidecar's Redis credential, put where an injected sidecar can read it: a Secret of the pod's
 * own namespace (secretKeyRef), never a plain env value of the pod spec, which the `view` role
 * reads. The team of that namespace can read the Secret (`edit` reads Secrets): the credential is
 * the sidecar ACL user's, worth nothing beyond what a sidecar does (docs/install.md, "Redis users").
 */
export const SIDECAR_SECRET = 'tollgate-sidecar-redis';
/** The env variable a sidecar reads its namespace's load-report key from (common/redis/load-reports.ts). */
export const REPORT_KEY_ENV = 'TOLLGATE_REPORT_KEY';

/** Environment variable → the value the Secret holds for it (the password, and the Sentinels'). */
export type SidecarCredentials = Readonly<Record<string, string>>;

/** The env entries that read the Secret's values from the pod's namespace, in the Secret's order. */
export function credentialEnv(names: readonly string[]): V1EnvVar[] {
  return names.map((name) => ({
    name,
    valueFrom: { secretKeyRef: { name: SIDECAR_SECRET, key: name } },
  }));
}

/** A namespace's load-report key as its sidecars read it: `<namespace>.<key, base64url>`. */
export function namespaceReportKey(signingKey: StoredKey, namespace: string): string {
  return `${namespace}.${reportKey(signingKey, namespace).toString('base64url')}`;
}

const FAILED_RECHECK_MS = 10_000;
const MAX_REMEMBERED_FAILURES = 10_000;

/** The namespace holds a Secret of the sidecar's name that is not Tollgate's. */
class ForeignSecret extends Error {}

/** Keeps the Secret current in each namespace that admits a guarded pod (checked again after a while). */
export class SidecarCredentialKeeper {
  private readonly core: CoreV1Api;
  private readonly fresh = new Map<string, number>();
  /**
   * Namespaces whose Secret could not be written lately, and why: the webhook port answers any
   * caller that reaches it (unless `sidecar.webhook.from` is set), so a made-up review naming a
   * namespace costs the API server one write per while, not one per review.
   */
  private readonly failed = new Map<string, { until: number; err: Error }>();

  constructor(
    kc: KubeConfig,
    /** What the Secret of a namespace holds: its own report key differs from every other's. */
    private readonly credentialsFor: (namespace: string) => SidecarCredentials,
    private readonly recheckMs = 60_000,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
  }

  async ensure(namespace: string): Promise<void> {
    if ((this.fresh.get(namespace) ?? 0) > Date.now()) return;
    const failed = this.failed.get(namespace);
    if (failed !== undefined && failed.until > Date.now()) throw failed.err;
    try {
      await this.write(namespace);
      this.failed.delete(namespace);
    } catch (err) {
      // Only what asking again at once would not change (no such namespace, not allowed, a Secret
      // of another's): an API server that hiccuped is asked again by the next pod.
      const lasting = isApiStatus(err, 404) || isApiStatus(err, 403) || err instanceof ForeignSecret;
      if (lasting) {
        if (this.failed.size >= MAX_REMEMBERED_FAILURES) this.failed.clear();
        this.failed.set(namespace, { until: Date.now() + FAILED_RECHECK_MS, err: err as Error });
      }
      throw err;
    }
    this.fresh.set(namespace, Date.now() + this.recheckMs);
  }

  private async write(namespace: string): Promise<void> {
    const data = Object.fromEntries(
      Object.entries(this.credentialsFor(namespace)).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    );
    const body = {
      metadata: {
        name: SIDECAR_SECRET,
        namespace,
        labels: { 'app.kubernetes.io/managed-by': 'tollgate', 'app.kubernetes.io/component': 'sidecar' },
      },
      type: 'Opaque',
      data,
    };
    try {
      await this.core.createNamespacedSecret({ namespace, body });
    } catch (err) {
      if (!isApiStatus(err, 409)) throw err;
      // One there already: ours (or ours the team wrote over) is made what the sidecar needs
      // again; another application's Secret of that name is never overwritten.
      const there = await this.core.readNamespacedSecret({ namespace, name: SIDECAR_SECRET });
      if (there.metadata?.labels?.['app.kubernetes.io/managed-by'] !== 'tollgate')
        throw new ForeignSecret(
          `namespace "${namespace}" holds a Secret named ${SIDECAR_SECRET} that Tollgate did not make; rename or remove it`,
        );
      await this.core.replaceNamespacedSecret({ namespace, name: SIDECAR_SECRET, body });
    }
  }
}
