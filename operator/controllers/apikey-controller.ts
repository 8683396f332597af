import type { KeyIndexWriter } from '../../common/apikey/index-writer.js';
import { API_KEY_FINALIZER, apiKeyId, toKeyGrant, type ApiKey } from '../../common/resources/apikey.js';
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

const isConflict = (e: unknown) => e instanceof ConflictError;
const stampOf = (k: ApiKeyResource): string => `${k.metadata.uid}:${k.metadata.generation}`;

/**
 * ApiKey → its Redis index entry (`tg:key:<hash>` → KeyGrant, announced on the keys channel).
 * Deletion goes through a finalizer so the entry is removed, and every gateway told, before the
 * resource disappears; a key deleted while the operator was down is still cleaned up.
 */
export class ApiKeyReconciler implements Reconciler {
  readonly name = 'apikey';
  /** uid:generation of the entry last written per key; cleared when Redis lost the index. */
  private readonly written = new Map<string, string>();
  /**
   * The sealed entry of each key's uid:generation, kept to write again after Redis lost the index:
   * sealing (an ES256 signature) is most of a rebuild's cost.
   */
  private readonly sealed = new Map<string, { stamp: string; value: string }>();
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
   * deleted or not yet under the finalizer are left to their reconcile.
   */
  async writeAll(): Promise<void> {
    this.written.clear();
    const live = this.keys
      .list()
      .filter(
        (k) => !k.metadata.deletionTimestamp && (k.metadata.finalizers ?? []).includes(API_KEY_FINALIZER),
      );
    const byHash = new Map<string, { key: string; stamp: string }>();
    const entries = live.map((k) => {
      const key = refKey({ namespace: k.metadata.namespace ?? '', name: k.metadata.name });
      const stamp = stampOf(k);
      byHash.set(k.spec.hash, { key, stamp });
      const kept = this.sealed.get(key);
      return {
        hash: k.spec.hash,
        grant: toKeyGrant(k),
        ...(kept?.stamp === stamp ? { sealed: kept.value } : {}),
      };
    });
    await this.index.putMany(entries, (hash, value) => {
      const at = byHash.get(hash);
      if (at === undefined) return;
      this.written.set(at.key, at.stamp);
      this.sealed.set(at.key, { stamp: at.stamp, value });
    });
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const ref = parseRefKey(key);
    let obj = this.keys.get(ref);
    if (!obj) {
      const gone = this.tombstones.get(key);
      if (gone) await this.index.delete(gone);
      this.tombstones.delete(key);
      this.written.delete(key);
      this.sealed.delete(key);
      return undefined;
    }
    const finalizers = obj.metadata.finalizers ?? [];
    if (obj.metadata.deletionTimestamp) {
      if (!finalizers.includes(API_KEY_FINALIZER)) return undefined;
      await this.index.delete({ hash: obj.spec.hash, id: apiKeyId(obj) });
      this.written.delete(key);
      this.sealed.delete(key);
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
    if (this.written.get(key) === stamp) return undefined;
    this.sealed.set(key, { stamp, value: await this.index.put(obj.spec.hash, toKeyGrant(obj)) });
    this.written.set(key, stamp);
    return undefined;
  }
}
