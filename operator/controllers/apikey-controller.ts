import type { KeyIndexWriter } from '../../common/apikey/index-writer.js';
import {
  API_KEY_API_VERSION,
  API_KEY_FINALIZER,
  API_KEY_KIND,
  apiKeyId,
  toKeyGrant,
  type ApiKey,
} from '../../common/resources/apikey.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import {
  ConflictError,
  parseRefKey,
  refKey,
  type Resource,
  type ResourceRef,
  type ResourceSource,
} from '../framework/resource-source.js';
import {
  withConflictRetry,
  type ReconcileResult,
  type Reconciler,
  type Watches,
} from '../framework/controller.js';

export type ApiKeyResource = ApiKey & Resource;

/**
 * What the operator keeps of an ApiKey: what its reconciles and the usage sync read, nothing more
 * (no labels, annotations or timestamps), so 100,000 keys fit in a small operator. Writes never send
 * the whole object back (finalizers go as a merge patch, status to its subresource).
 */
export function compactApiKey(key: ApiKey): ApiKeyResource {
  const m = key.metadata as ApiKey['metadata'] & Resource['metadata'];
  const metadata: Resource['metadata'] = { name: m.name };
  if (m.namespace !== undefined) metadata.namespace = shared(m.namespace);
  if (m.uid !== undefined) metadata.uid = m.uid;
  if (m.resourceVersion !== undefined) metadata.resourceVersion = m.resourceVersion;
  if (m.generation !== undefined) metadata.generation = m.generation;
  if (m.finalizers !== undefined) metadata.finalizers = m.finalizers.map(shared);
  if (m.deletionTimestamp !== undefined) metadata.deletionTimestamp = m.deletionTimestamp;
  const spec = { ...key.spec, roles: key.spec.roles.map(shared) };
  const compact: ApiKeyResource = { apiVersion: API_KEY_API_VERSION, kind: API_KEY_KIND, metadata, spec };
  if (key.status !== undefined) compact.status = key.status;
  return compact;
}

/**
 * One copy of each of the few values most keys repeat (their namespace, finalizer, roles): parsed
 * from JSON, each key would hold its own.
 */
const repeated = new Map<string, string>();
function shared(value: string): string {
  const known = repeated.get(value);
  if (known !== undefined) return known;
  if (repeated.size < 10_000) repeated.set(value, value);
  return value;
}

const isConflict = (e: unknown) => e instanceof ConflictError;
const stampOf = (k: ApiKeyResource): string => `${k.metadata.uid}:${k.metadata.generation}`;

/**
 * ApiKey → its Redis index entry (`tg:key:<hash>` → KeyGrant, announced on the keys channel).
 * Deletion goes through a finalizer so the entry is removed, and every gateway told, before the
 * resource disappears; a key deleted while the operator was down is still cleaned up.
 */
export class ApiKeyReconciler implements Reconciler {
  readonly name = 'apikey';
  /**
   * Per key: the uid:generation its entry was last sealed for, that seal (to write the same entry
   * again, unsigned, after Redis lost the index: signing is most of a rebuild's cost), and whether
   * it is written since the index was last found missing.
   */
  private readonly entries = new Map<string, { stamp: string; seal: string; written: boolean }>();
  private readonly tombstones = new Map<string, { hash: string; id: string }>();

  readonly watches: Watches<ApiKeyResource>;

  constructor(
    private readonly keys: ResourceSource<ApiKeyResource>,
    private readonly index: KeyIndexWriter,
  ) {
    this.watches = { for: keys, onDeleted: (ref, gone) => this.noteDeleted(ref, gone), workers: 16 };
  }

  noteDeleted(ref: ResourceRef, key: ApiKeyResource | undefined): void {
    if (key) this.tombstones.set(refKey(ref), { hash: key.spec.hash, id: apiKeyId(key) });
  }

  /**
   * Redis may have lost the index: every live key's entry is written again, in bulk (pipelined
   * batches, sealed values reused), and the reconciles that follow find them written. Keys being
   * deleted or not yet under the finalizer are left to their reconcile. Resolves with the count.
   */
  async writeAll(): Promise<number> {
    for (const e of this.entries.values()) e.written = false;
    let count = 0;
    await this.index.putMany(this.live(), (e, seal) => {
      count++;
      this.entries.set(e.ref, { stamp: e.stamp, seal, written: true });
    });
    return count;
  }

  /** The keys an index build writes, each with the seal kept for it when it is still current. */
  private *live(): Generator<{
    ref: string;
    stamp: string;
    hash: string;
    grant: () => KeyGrant;
    seal?: string;
  }> {
    for (const k of this.keys.list()) {
      if (k.metadata.deletionTimestamp || !(k.metadata.finalizers ?? []).includes(API_KEY_FINALIZER))
        continue;
      const ref = refKey({ namespace: k.metadata.namespace ?? '', name: k.metadata.name });
      const stamp = stampOf(k);
      const kept = this.entries.get(ref);
      yield {
        ref,
        stamp,
        hash: k.spec.hash,
        grant: () => toKeyGrant(k),
        ...(kept?.stamp === stamp ? { seal: kept.seal } : {}),
      };
    }
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const ref = parseRefKey(key);
    let obj = this.keys.get(ref);
    if (!obj) {
      const gone = this.tombstones.get(key);
      if (gone) await this.index.delete(gone);
      this.tombstones.delete(key);
      this.entries.delete(key);
      return undefined;
    }
    const finalizers = obj.metadata.finalizers ?? [];
    if (obj.metadata.deletionTimestamp) {
      if (!finalizers.includes(API_KEY_FINALIZER)) return undefined;
      await this.index.delete({ hash: obj.spec.hash, id: apiKeyId(obj) });
      this.entries.delete(key);
      await withConflictRetry(
        obj,
        () => this.keys.read(ref),
        (k) =>
          this.keys.updateFinalizers(
            k,
            (k.metadata.finalizers ?? []).filter((f) => f !== API_KEY_FINALIZER),
          ),
        isConflict,
      );
      return undefined;
    }
    if (!finalizers.includes(API_KEY_FINALIZER)) {
      const updated = await withConflictRetry(
        obj,
        () => this.keys.read(ref),
        (k) => this.keys.updateFinalizers(k, [...(k.metadata.finalizers ?? []), API_KEY_FINALIZER]),
        isConflict,
      );
      if (!updated) return undefined;
      obj = updated;
    }
    const stamp = stampOf(obj);
    const entry = this.entries.get(key);
    if (entry?.written === true && entry.stamp === stamp) return undefined;
    this.entries.set(key, {
      stamp,
      seal: await this.index.put(obj.spec.hash, toKeyGrant(obj)),
      written: true,
    });
    return undefined;
  }
}
