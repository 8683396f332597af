import { CoreV1Api, type KubeConfig, type V1EnvVar } from '@kubernetes/client-node';
import { isApiStatus } from '../../common/kube/custom-objects.js';

/**
 * The sidecar's Redis credential, put where an injected sidecar can read it: a Secret of the pod's
 * own namespace (secretKeyRef), never a plain env value of the pod spec, which the `view` role
 * reads. The team of that namespace can read the Secret (`edit` reads Secrets): the credential is
 * the sidecar ACL user's, worth nothing beyond what a sidecar does (README, "Redis users").
 */
export const SIDECAR_SECRET = 'tollgate-sidecar-redis';

/** Environment variable → the value the Secret holds for it (the password, and the Sentinels'). */
export type SidecarCredentials = Readonly<Record<string, string>>;

/** The env entries that read the credential from the pod's namespace, in the Secret's order. */
export function credentialEnv(credentials: SidecarCredentials): V1EnvVar[] {
  return Object.keys(credentials).map((name) => ({
    name,
    valueFrom: { secretKeyRef: { name: SIDECAR_SECRET, key: name } },
  }));
}

/** Keeps the Secret current in each namespace that admits a guarded pod (checked again after a while). */
export class SidecarCredentialKeeper {
  private readonly core: CoreV1Api;
  private readonly fresh = new Map<string, number>();

  constructor(
    kc: KubeConfig,
    private readonly credentials: SidecarCredentials,
    private readonly recheckMs = 60_000,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
  }

  async ensure(namespace: string): Promise<void> {
    if ((this.fresh.get(namespace) ?? 0) > Date.now()) return;
    const data = Object.fromEntries(
      Object.entries(this.credentials).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
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
      // One there already (ours, or one the team wrote over): made what the sidecar needs again.
      await this.core.replaceNamespacedSecret({ namespace, name: SIDECAR_SECRET, body });
    }
    this.fresh.set(namespace, Date.now() + this.recheckMs);
  }
}
