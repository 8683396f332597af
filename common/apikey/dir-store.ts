import { API_KEY_PLURAL, apiKeyName, apiKeySchema, type ApiKey } from '../resources/apikey.js';
import type { ManifestCollection, ManifestDir } from '../resources/manifest-dir.js';
import { apiServerTimestamp } from '../resources/object-meta.js';
import { pageOf, type ApiKeyFilters, type ApiKeyPage, type ApiKeyStore } from './store.js';

/** ApiKey manifests in the standalone state directory (`<dir>/apikeys/key-<id>.yaml`). */
export class DirApiKeyStore implements ApiKeyStore {
  private readonly keys: ManifestCollection<ApiKey>;

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
      filters,
    );
  }

  async get(owner: string, id: string): Promise<ApiKey | undefined> {
    const key = await this.keys.get(apiKeyName(id));
    return key?.spec.owner === owner ? key : undefined;
  }

  async delete(owner: string, id: string): Promise<boolean> {
    if ((await this.get(owner, id)) === undefined) return false;
    return this.keys.delete(apiKeyName(id));
  }
}
