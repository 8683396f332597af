import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { StoredKey } from '../crypto/key-file.js';
import type { LoadReport } from '../resources/model-scaling.js';

/**
 * Load reports (calls in flight per model version) drive the autoscaler, and sidecars write them
 * with a Redis credential their pod's team can read: a report a team wrote by hand must not scale
 * another team's model. So each report carries a MAC under a key of its writer's scope: the central
 * gateways' (the empty scope: no namespace has an empty name) or one namespace's, whose key the
 * operator puts in that namespace's sidecar Secret. The autoscaler, which derives every scope's key
 * from the signing key, believes a report only under the central scope or the model's own
 * namespace. A team can still report load for its own models, which it could cause anyway.
 */
export const CENTRAL_SCOPE = '';

/** A scope's report key, derived from the signing key (the operator's and the central gateways'). */
export function reportKey(signingKey: StoredKey, scope: string): Buffer {
  const root = createHash('sha256').update('tollgate load reports\n').update(signingKey.d).digest();
  return createHmac('sha256', root).update(scope).digest();
}

/** How a writer signs its reports: its scope and that scope's key. */
export interface ReportSigner {
  scope: string;
  key: Buffer;
}

type Measured = Pick<LoadReport, 'concurrency' | 'at'>;

// The Redis key and field are covered: a report copied to another model or version fails.
const mac = (key: Buffer, redisKey: string, field: string, scope: string, r: Measured): string =>
  createHmac('sha256', key)
    .update(`${redisKey}\n${field}\n${scope}\n${r.concurrency}\n${r.at}`)
    .digest('base64url');

export function signReport(signer: ReportSigner, redisKey: string, field: string, r: Measured): LoadReport {
  return { ...r, scope: signer.scope, mac: mac(signer.key, redisKey, field, signer.scope, r) };
}

/** The autoscaler's check: a report of the central gateways or of the model's own namespace. */
export class ReportChecker {
  private readonly keys = new Map<string, Buffer>();

  constructor(private readonly signingKey: StoredKey) {}

  believes(redisKey: string, field: string, report: LoadReport, modelNamespace: string): boolean {
    if (typeof report.scope !== 'string' || typeof report.mac !== 'string') return false;
    if (report.scope !== CENTRAL_SCOPE && report.scope !== modelNamespace) return false;
    let key = this.keys.get(report.scope);
    if (key === undefined) {
      key = reportKey(this.signingKey, report.scope);
      this.keys.set(report.scope, key);
    }
    const want = Buffer.from(mac(key, redisKey, field, report.scope, report));
    const got = Buffer.from(report.mac);
    return want.length === got.length && timingSafeEqual(want, got);
  }
}
