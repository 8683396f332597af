import type { KeyIndexWriter } from '../../common/apikey/index-writer.js';
import { apiKeyId, toKeyGrant, type ApiKey } from '../../common/resources/apikey.js';
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

export const APIKEY_FINALIZER = 'tollgate.dev/key-index';

export type ApiKeyResource = ApiKey & Resource;

const isConflict = (e: unknown) => e instanceof ConflictError;

/**
 * ApiKey → its Redis index entry (`tg:key:<hash>` → KeyGrant, announced on the keys channel).
 * Deletion goes through a finalizer so the entry is removed, and every gateway told, before the
 * resource disappears; a key deleted while the operator was down is still cleaned up.
 */
export class ApiKeyReconciler implements Reconciler {
  readonly name = 'apikey';
  /** uid:generation of the entry last written per key; cleared when Redis lost the index. */
  private readonly written = new Map<string, string>();
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

  /** Redis came back empty: every entry must be written again. */
  forgetWritten(): void {
    this.written.clear();
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const ref = parseRefKey(key);
    let obj = this.keys.get(ref);
    if (!obj) {
      const gone = this.tombstones.get(key);
      if (gone) await this.index.delete(gone);
      this.tombstones.delete(key);
      this.written.delete(key);
      return undefined;
    }
    const finalizers = obj.metadata.finalizers ?? [];
    if (obj.metadata.deletionTimestamp) {
      if (!finalizers.includes(APIKEY_FINALIZER)) return undefined;
      await this.index.delete({ hash: obj.spec.hash, id: apiKeyId(obj) });
      this.written.delete(key);
      await withConflictRetry(
        obj,
        () => this.keys.read(ref),
        (k) =>
          this.keys.updateFinalizers(
            k,
            (k.metadata.finalizers ?? []).filter((f) => f !== APIKEY_FINALIZER),
          ),
        isConflict,
      );
      return undefined;
    }
    if (!finalizers.includes(APIKEY_FINALIZER)) {
      const updated = await withConflictRetry(
        obj,
        () => this.keys.read(ref),
        (k) => this.keys.updateFinalizers(k, [...(k.metadata.finalizers ?? []), APIKEY_FINALIZER]),
        isConflict,
      );
      if (!updated) return undefined;
      obj = updated;
    }
    const stamp = `${obj.metadata.uid}:${obj.metadata.generation}`;
    if (this.written.get(key) === stamp) return undefined;
    await this.index.put(obj.spec.hash, toKeyGrant(obj));
    this.written.set(key, stamp);
    return undefined;
  }
}
