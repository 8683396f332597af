import { API_KEY_PLURAL, apiKeyId, apiKeyName, apiKeySchema, type ApiKey } from '../resources/apikey.js';
import type { ManifestCollection, ManifestDir } from '../resources/manifest-dir.js';
import { apiServerTimestamp } from '../resources/object-meta.js';
import {
  keyChanged,
  listingOf,
  pageOf,
  type ApiKeyFilters,
  type ApiKeyPage,
  type ApiKeyStore,
} from './store.js';

/** ApiKey manifests in the standalone state directory (`<dir>/apikeys/key-<id>.yaml`). */
export class DirApiKeyStore implements ApiKeyStore {
  private readonly keys: ManifestCollection<ApiKey>;
  private updates: Promise<unknown> = Promise.resolve();

  constructor(dir: ManifestDir) {
    this.keys = dir.collection(API_KEY_PLURAL, apiKeySchema);
  }

  create(key: ApiKey): Promise<ApiKey> {
    // Second precision, as the API server records it, so both stores order keys alike.
    const creationTimestamp = apiServerTimestamp();
    return this.keys.create({ ...key, metadata: { ...key.metadata, creationTimestamp } });
  }

  async list(owner: string, filters?: ApiKeyFilters): Promise<ApiKeyPage> {
    const all = await this.keys.list();
    return pageOf(
      all.filter((k) => k.spec.owner === owner),
      listingOf,
      filters,
    );
  }

  async get(owner: string, id: string): Promise<ApiKey | undefined> {
    const key = await this.find(id);
    return key?.spec.owner === owner ? key : undefined;
  }

  async listEvery(filters: ApiKeyFilters & { owner?: string } = {}): Promise<ApiKeyPage> {
    const { owner } = filters;
    const all = await this.keys.list();
    return pageOf(
      all.filter((k) => owner === undefined || k.spec.owner === owner),
      listingOf,
      filters,
      true,
    );
  }

  async expiringBetween(afterMs: number, untilMs: number): Promise<ApiKey[]> {
    return (await this.keys.list()).filter(
      (k) =>
        k.spec.expiresAt !== undefined &&
        k.spec.rolled === undefined &&
        Date.parse(k.spec.expiresAt) > afterMs &&
        Date.parse(k.spec.expiresAt) <= untilMs,
    );
  }

  async everyKeyOf(owner: string): Promise<ApiKey[]> {
    return (await this.keys.list()).filter((k) => k.spec.owner === owner);
  }

  async close(): Promise<void> {
    // Nothing runs between calls: every call reads the directory.
  }

  async countOf(owner: string): Promise<number> {
    return (await this.everyKeyOf(owner)).length;
  }

  async keysOfIdentity(owner: string, identity: string): Promise<ApiKey[]> {
    return (await this.keys.list()).filter((k) => k.spec.identity === identity && k.spec.owner === owner);
  }

  find(id: string): Promise<ApiKey | undefined> {
    return this.keys.get(apiKeyName(id));
  }

  update(key: ApiKey): Promise<ApiKey> {
    // Updates run one at a time, so the version check and the write below are one step.
    const next = this.updates.then(() => this.compareAndPut(key));
    this.updates = next.catch(() => undefined);
    return next;
  }

  /**
   * A resourceVersion as the API server keeps one, so a write over a newer manifest is refused
   * here too.
   */
  private async compareAndPut(key: ApiKey): Promise<ApiKey> {
    const current = await this.keys.get(key.metadata.name);
    const version = current?.metadata.resourceVersion ?? '0';
    if (current === undefined || (key.metadata.resourceVersion ?? '0') !== version) {
      throw keyChanged(apiKeyId(key));
    }
    return this.keys.put({
      ...key,
      metadata: { ...key.metadata, resourceVersion: String(Number(version) + 1) },
    });
  }

  async delete(owner: string, id: string): Promise<boolean> {
    if ((await this.get(owner, id)) === undefined) return false;
    return this.keys.delete(apiKeyName(id));
  }
}
