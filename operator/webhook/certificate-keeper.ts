import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1Secret,
} from '@kubernetes/client-node';
import { isApiStatus } from '../../common/kube/custom-objects.js';
import type { Logger } from '../../common/logger.js';
import type { OperatorMetrics } from '../metrics.js';
import { issueWebhookCertificates, notAfter } from './certificates.js';

/**
 * Keeps the webhook's TLS current. The certificates live in a Secret of the operator's namespace
 * (`tls.crt`, `tls.key`, `ca.crt`, as cert-manager writes them), so every replica serves the same
 * ones. With `issue`, any replica makes new ones when the Secret is missing or a third of the
 * validity is left (creates and updates are guarded by resourceVersion, so two replicas racing
 * write once), and keeps the webhook configuration's caBundle equal to `ca.crt`: the new CA and the
 * one before it, so a replica still serving the old certificate stays trusted until it reloads.
 * Without `issue` (cert-manager), it only loads what the Secret holds.
 */
export interface CertificateKeeperOptions {
  namespace: string;
  secret: string;
  service: string;
  /** The MutatingWebhookConfiguration whose caBundle to keep (with `issue`). */
  webhookConfiguration: string;
  issue: boolean;
  validityMs: number;
  checkMs: number;
}

interface Loaded {
  cert: string;
  key: string;
  ca: string;
}

export class CertificateKeeper {
  private readonly core: CoreV1Api;
  private readonly admission: AdmissionregistrationV1Api;
  private timer: NodeJS.Timeout | undefined;
  private served: string | undefined;
  private running: Promise<void> | undefined;

  constructor(
    kc: KubeConfig,
    private readonly opts: CertificateKeeperOptions,
    private readonly onCertificates: (tls: { cert: string; key: string }) => Promise<void>,
    private readonly log: Logger,
    private readonly metrics: OperatorMetrics,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.admission = kc.makeApiClient(AdmissionregistrationV1Api);
  }

  start(): void {
    void this.check();
    this.timer = setInterval(() => void this.check(), this.opts.checkMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass: issue if needed, keep the caBundle, serve what the Secret holds. */
  check(): Promise<void> {
    this.running ??= this.pass()
      .catch((err: unknown) => this.log.warn({ err }, 'webhook certificates: check failed; retrying'))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<void> {
    let secret = await this.read();
    if (this.opts.issue && this.needsNew(secret)) secret = await this.issue(secret);
    const loaded = secret === undefined ? undefined : decode(secret);
    if (loaded === undefined) {
      this.log.info({ secret: this.opts.secret }, 'webhook certificates not in their Secret yet');
      return;
    }
    if (this.opts.issue) await this.keepCaBundle(loaded.ca);
    if (loaded.cert !== this.served) {
      await this.onCertificates({ cert: loaded.cert, key: loaded.key });
      this.served = loaded.cert;
    }
  }

  private async read(): Promise<V1Secret | undefined> {
    try {
      return await this.core.readNamespacedSecret({ namespace: this.opts.namespace, name: this.opts.secret });
    } catch (err) {
      if (isApiStatus(err, 404)) return undefined;
      throw err;
    }
  }

  private needsNew(secret: V1Secret | undefined): boolean {
    const loaded = secret === undefined ? undefined : decode(secret);
    if (loaded === undefined) return true;
    const left = notAfter(loaded.cert).getTime() - Date.now();
    return left < this.opts.validityMs / 3;
  }

  /** Writes new certificates; on a conflict another replica did, and its Secret is read back. */
  private async issue(current: V1Secret | undefined): Promise<V1Secret | undefined> {
    const fresh = issueWebhookCertificates({
      service: this.opts.service,
      namespace: this.opts.namespace,
      validityMs: this.opts.validityMs,
    });
    const previousCa = current === undefined ? undefined : decode(current)?.ca;
    const previous = previousCa === undefined ? [] : firstCertificate(previousCa);
    const stillValid = previous.filter((pem) => notAfter(pem).getTime() > Date.now());
    const data = {
      'tls.crt': b64(fresh.cert),
      'tls.key': b64(fresh.key),
      'ca.crt': b64([fresh.ca, ...stillValid].join('')),
    };
    try {
      const written =
        current === undefined
          ? await this.core.createNamespacedSecret({
              namespace: this.opts.namespace,
              body: {
                metadata: {
                  name: this.opts.secret,
                  labels: {
                    'app.kubernetes.io/managed-by': 'tollgate',
                    'app.kubernetes.io/component': 'webhook',
                  },
                },
                type: 'kubernetes.io/tls',
                data,
              },
            })
          : await this.core.replaceNamespacedSecret({
              namespace: this.opts.namespace,
              name: this.opts.secret,
              body: { ...current, data },
            });
      this.metrics.webhookCertRotations.inc();
      this.log.info(
        { secret: this.opts.secret, notAfter: notAfter(fresh.cert).toISOString() },
        current === undefined ? 'webhook certificates issued' : 'webhook certificates rotated',
      );
      return written;
    } catch (err) {
      if (isApiStatus(err, 409)) return this.read();
      throw err;
    }
  }

  private async keepCaBundle(ca: string): Promise<void> {
    const name = this.opts.webhookConfiguration;
    let config;
    try {
      config = await this.admission.readMutatingWebhookConfiguration({ name });
    } catch (err) {
      if (isApiStatus(err, 404)) {
        this.log.warn({ name }, 'the MutatingWebhookConfiguration does not exist; no pod gets the sidecar');
        return;
      }
      throw err;
    }
    const want = b64(ca);
    const patch = (config.webhooks ?? [])
      .map((w, i) => ({ w, i }))
      .filter(({ w }) => w.clientConfig.caBundle !== want)
      // `add` sets the field whether or not it is there yet.
      .map(({ i }) => ({ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: want }));
    if (patch.length === 0) return;
    await this.admission.patchMutatingWebhookConfiguration(
      { name, body: patch },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    this.log.info({ name }, 'webhook caBundle updated');
  }
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

function decode(secret: V1Secret): Loaded | undefined {
  const d = secret.data ?? {};
  const get = (k: string) => (d[k] === undefined ? undefined : Buffer.from(d[k], 'base64').toString('utf8'));
  const cert = get('tls.crt');
  const key = get('tls.key');
  const ca = get('ca.crt');
  return cert && key && ca ? { cert, key, ca } : undefined;
}

/** The first PEM certificate of a bundle (the CA that signed the serving certificate). */
function firstCertificate(bundle: string): string[] {
  const m = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\r?\n?/.exec(bundle);
  return m ? [m[0].endsWith('\n') ? m[0] : `${m[0]}\n`] : [];
}
