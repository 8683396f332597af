import type { Redis } from 'ioredis';
import type { KeyIndexWriter } from '../../common/apikey/index-writer.js';
import type { EntrySealer, EntryVerifier } from '../../common/redis/sealed-entry.js';
import { sweepStaleKeys } from '../rebuild.js';
import {
  API_KEY_API_VERSION,
  API_KEY_FINALIZER,
  API_KEY_KIND,
  apiKeyId,
  toKeyGrant,
  type ApiKey,
} from '../../common/resources/apikey.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { identityCounterAccount, type Identity } from '../../common/resources/identity.js';
import type { KeyFinalizers } from './key-finalizers.js';
import {
  isConflict,
  parseRefKey,
  refKey,
  type Resource,
  type ResourceRef,
  type ResourceSource,
  type WatchedSource,
} from '../framework/resource-source.js';
import {
  withConflictRetry,
  type ReconcileResult,
  type Reconciler,
  type Watches,
} from '../framework/controller.js';
import { specOrMetadataChanged } from '../framework/predicates.js';

export type ApiKeyResource = ApiKey & Resource;
export type IdentityResource = Identity & Resource;

/**
 * What the operator keeps of an ApiKey: what its reconciles and the usage sync read, nothing more
 * (no labels, annotations or timestamps), so 100,000 keys fit in a small operator. Writes never send
 * the whole object back (finalizers go as a merge patch, status to its subresource).
 */
export function compactApiKey(key: ApiKey): ApiKeyResource {
  const m = key.metadata as ApiKey['metadata'] & Resource['metadata'];
  // Each object made whole in one literal: V8 keeps the fields of an object that grows after it is
  // made in a second array, one more allocation for each of 100,000 keys.
  const metadata: Resource['metadata'] = {
    name: m.name,
    namespace: m.namespace === undefined ? undefined : shared(m.namespace),
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    generation: m.generation,
    finalizers: m.finalizers === undefined ? undefined : sharedList(m.finalizers),
    deletionTimestamp: m.deletionTimestamp,
  };
  const spec = {
    ...key.spec,
    module: shared(key.spec.module),
    owner: shared(key.spec.owner),
    roles: sharedList(key.spec.roles),
  };
  return { apiVersion: API_KEY_API_VERSION, kind: API_KEY_KIND, metadata, spec, status: key.status };
}

/**
 * One copy of each of the few values most keys repeat (their namespace, owner, finalizers, roles):
 * parsed from JSON, each key would hold its own. Lists are shared frozen: no one changes a cached
 * key in place.
 */
const repeated = new Map<string, string>();
function shared<S extends string>(value: S): S {
  const known = repeated.get(value) as S | undefined;
  if (known !== undefined) return known;
  if (repeated.size < 10_000) repeated.set(value, value);
  return value;
}
const repeatedLists = new Map<string, readonly string[]>();
function sharedList(values: readonly string[]): string[] {
  const id = JSON.stringify(values);
  const known = repeatedLists.get(id);
  if (known !== undefined) return known as string[];
  const list = Object.freeze(values.map((v) => shared(v)));
  if (repeatedLists.size < 10_000) repeatedLists.set(id, list);
  return list as string[];
}

/**
 * A key's entry as last sealed: for the object (uid, the same string the cached key holds) at the
 * generation, with that seal (to write the same entry again, unsigned, after Redis lost the index:
 * signing is most of a rebuild's cost), and whether it is written since the index was last found
 * missing. Kept for each of up to 100,000 keys, so it holds no string of its own but the seal.
 */
interface Written {
  uid: string | undefined;
  /**
   * The hash the entry is under (the cached key's own string): a key deleted and made again under
   * its name with another hash, in one reconcile (or seen as an update across a relist), has its
   * old entry removed by it.
   */
  hash: string;
  generation: number | undefined;
  /** The resourceVersion of the key's identity the entry was made from (`-` for none). */
  identity: string | undefined;
  seal: string;
  written: boolean;
}
const MISSING = '-';

/**
 * ApiKey → its Redis index entry (`tg:key:<hash>` → KeyGrant, announced on the keys channel).
 * Deletion goes through a finalizer so the entry is removed, and every gateway told, before the
 * resource disappears; a key deleted while the operator was down is still cleaned up. A key that
 * arrives without the finalizer (`kubectl apply`) is indexed at once like any other, and the
 * finalizer follows in the background (key-finalizers.ts); deleted before it lands, its entry goes
 * on the informer's delete event (or the start-up sweep).
 */
export class ApiKeyReconciler implements Reconciler {
  readonly name = 'apikey';
  private readonly entries = new Map<string, Written>();
  private readonly tombstones = new Map<string, { hash: string; id: string }>();
  private readonly accounts = new Map<string, string>();

  readonly watches: Watches<ApiKeyResource>;

  constructor(
    private readonly keys: ResourceSource<ApiKeyResource>,
    /** A key of an identity carries its limits: a change to one rewrites the entries of its keys. */
    private readonly identities: WatchedSource<IdentityResource>,
    private readonly index: KeyIndexWriter,
    /** Makes identities' counter accounts (common/resources/identity.ts), as the gateways do. */
    private readonly sealer: Pick<EntrySealer, 'deriveSecret'>,
    /** Puts the finalizer on keys that arrived without it, a few at a time, after their entry. */
    private readonly finalizers: Pick<KeyFinalizers<ApiKeyResource>, 'add'>,
    /**
     * Where stale entries are swept from (operator/rebuild.ts): only with the namespace whose keys
     * this operator believes (the release's); an operator without one (a test's, standalone)
     * leaves the index's strays alone.
     */
    private readonly stale?: { redis: Redis; verifier: EntryVerifier; namespace: string },
  ) {
    this.watches = {
      for: keys,
      // Usage and the entry's state, written to status by the operator itself, wake nothing.
      changed: specOrMetadataChanged,
      onDeleted: (ref, gone) => this.noteDeleted(ref, gone),
      owns: [
        {
          start: (onChange) => identities.start((ref) => this.keysOf(ref).forEach(onChange)),
          stop: () => identities.stop(),
        },
      ],
      workers: 16,
    };
  }

  /** The keys of an identity (one pass over the cache: identities change seldom). */
  private keysOf(identity: ResourceRef): ResourceRef[] {
    const refs: ResourceRef[] = [];
    for (const k of this.keys.list()) {
      const namespace = k.metadata.namespace ?? '';
      if (k.spec.identity === identity.name && namespace === identity.namespace)
        refs.push({ namespace, name: k.metadata.name });
    }
    return refs;
  }

  /**
   * The key's identity as the cache holds it now, with the version an entry made from it records
   * (`-` when it is missing). Read once per write, before signing: an identity changing meanwhile
   * leaves an entry recorded as older than it is, which its requeued reconcile then rewrites.
   */
  private identityNow(k: ApiKeyResource): {
    identity: IdentityResource | undefined;
    version: string | undefined;
  } {
    const name = k.spec.identity;
    if (name === undefined) return { identity: undefined, version: undefined };
    const identity = this.identities.get({ namespace: k.metadata.namespace ?? '', name });
    return { identity, version: identity?.metadata.resourceVersion ?? MISSING };
  }

  private grantOf(k: ApiKeyResource, identity: IdentityResource | undefined): KeyGrant {
    return toKeyGrant(k, (name) => ({ spec: identity?.spec, account: this.accountOf(name) }));
  }

  /** Identities' counter accounts, made once per name (a keyed digest each). */
  private accountOf(name: string): string {
    let account = this.accounts.get(name);
    if (account === undefined) {
      account = identityCounterAccount(this.sealer, name);
      if (this.accounts.size < 10_000) this.accounts.set(name, account);
    }
    return account;
  }

  private writtenFor(k: ApiKeyResource, seal: string, identity: string | undefined): Written {
    return {
      uid: k.metadata.uid,
      hash: k.spec.hash,
      generation: k.metadata.generation,
      identity,
      seal,
      written: true,
    };
  }

  private isFor(w: Written | undefined, k: ApiKeyResource, identity: string | undefined): w is Written {
    return (
      w !== undefined &&
      w.uid === k.metadata.uid &&
      w.generation === k.metadata.generation &&
      w.identity === identity
    );
  }

  noteDeleted(ref: ResourceRef, key: ApiKeyResource | undefined): void {
    if (key) this.tombstones.set(refKey(ref), { hash: key.spec.hash, id: apiKeyId(key) });
  }

  /**
   * Redis may have lost the index: every live key's entry is written again, in bulk (pipelined
   * batches, sealed values reused), and the reconciles that follow find them written, whether or not
   * the finalizer is on them yet. Keys being deleted are left to their reconcile. Resolves with the
   * count.
   */
  async writeAll(): Promise<number> {
    for (const e of this.entries.values()) e.written = false;
    let count = 0;
    await this.index.putMany(this.live(), (e, seal) => {
      count++;
      this.entries.set(e.ref, this.writtenFor(e.key, seal, e.identity));
    });
    return count;
  }

  /** The keys an index build writes, each with the seal kept for it when it is still current. */
  private *live(): Generator<{
    ref: string;
    key: ApiKeyResource;
    hash: string;
    grant: () => KeyGrant;
    identity: string | undefined;
    seal?: string;
  }> {
    for (const k of this.keys.list()) {
      if (k.metadata.deletionTimestamp) continue;
      const ref = refKey({ namespace: k.metadata.namespace ?? '', name: k.metadata.name });
      const kept = this.entries.get(ref);
      const { identity, version } = this.identityNow(k);
      yield {
        ref,
        key: k,
        hash: k.spec.hash,
        grant: () => this.grantOf(k, identity),
        identity: version,
        ...(this.isFor(kept, k, version) ? { seal: kept.seal } : {}),
      };
    }
  }

  async sweepStale(): Promise<number> {
    if (this.stale === undefined) return 0;
    const { redis, verifier, namespace } = this.stale;
    return sweepStaleKeys(redis, verifier, this.keys, namespace);
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const ref = parseRefKey(key);
    const obj = this.keys.get(ref);
    if (!obj) {
      const gone = this.tombstones.get(key);
      if (gone) await this.index.delete(gone);
      this.tombstones.delete(key);
      this.entries.delete(key);
      return undefined;
    }
    const finalizers = obj.metadata.finalizers ?? [];
    if (obj.metadata.deletionTimestamp) {
      // Its entry goes now, even when only another's finalizer holds the key (it was indexed
      // before ours landed, perhaps by an operator since restarted: no memory of it is needed).
      await this.index.delete({ hash: obj.spec.hash, id: apiKeyId(obj) });
      this.entries.delete(key);
      if (!finalizers.includes(API_KEY_FINALIZER)) return undefined;
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
    await this.writeEntry(key, obj);
    // The entry first: the key works now, and its finalizer follows in the background.
    if (!finalizers.includes(API_KEY_FINALIZER)) this.finalizers.add(key);
    return undefined;
  }

  private async writeEntry(key: string, obj: ApiKeyResource): Promise<void> {
    let entry = this.entries.get(key);
    // Another key under this name since (deleted and made again, without a finalizer to hold the
    // first): the entry of the one before goes, and every gateway is told.
    const gone = this.tombstones.get(key);
    for (const hash of new Set([entry?.hash, gone?.hash]))
      if (hash !== undefined && hash !== obj.spec.hash) {
        await this.index.delete({ hash, id: apiKeyId(obj) });
        this.entries.delete(key);
        entry = undefined;
      }
    this.tombstones.delete(key);
    const { identity, version } = this.identityNow(obj);
    if (this.isFor(entry, obj, version) && entry.written) return;
    const seal = await this.index.put(obj.spec.hash, this.grantOf(obj, identity));
    this.entries.set(key, this.writtenFor(obj, seal, version));
  }
}
