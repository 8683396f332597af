import { IDENTITY_PLURAL, identitySchema, type Identity } from '../resources/identity.js';
import { ManifestExistsError, type ManifestCollection, type ManifestDir } from '../resources/manifest-dir.js';
import { apiServerTimestamp } from '../resources/object-meta.js';
import { identityChanged, identityExists, type IdentityStore } from './store.js';

/** Identity manifests in the standalone state directory (`<dir>/identities/<name>.yaml`). */
export class DirIdentityStore implements IdentityStore {
  private readonly identities: ManifestCollection<Identity>;
  /** Writes run one at a time, so a version check and its write are one step. */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(dir: ManifestDir) {
    this.identities = dir.collection(IDENTITY_PLURAL, identitySchema);
  }

  async create(identity: Identity): Promise<Identity> {
    try {
      return await this.identities.create({
        ...identity,
        metadata: { ...identity.metadata, creationTimestamp: apiServerTimestamp(), resourceVersion: '1' },
      });
    } catch (e) {
      if (e instanceof ManifestExistsError) throw identityExists(identity.metadata.name);
      throw e;
    }
  }

  get(name: string): Promise<Identity | undefined> {
    return this.identities.get(name);
  }

  async list(owner?: string): Promise<Identity[]> {
    return (await this.identities.list()).filter((i) => owner === undefined || i.spec.owner === owner);
  }

  update(identity: Identity): Promise<Identity> {
    return this.serially(async () => {
      const current = await this.current(identity);
      return this.identities.put({
        ...identity,
        metadata: {
          ...identity.metadata,
          resourceVersion: String(Number(current.metadata.resourceVersion ?? '0') + 1),
        },
      });
    });
  }

  delete(identity: Identity): Promise<boolean> {
    return this.serially(async () => {
      if ((await this.identities.get(identity.metadata.name)) === undefined) return false;
      await this.current(identity);
      return this.identities.delete(identity.metadata.name);
    });
  }

  /** The stored identity, if it is still the one the caller read. */
  private async current(identity: Identity): Promise<Identity> {
    const current = await this.identities.get(identity.metadata.name);
    if (
      current === undefined ||
      (current.metadata.resourceVersion ?? '0') !== (identity.metadata.resourceVersion ?? '0')
    )
      throw identityChanged(identity.metadata.name);
    return current;
  }

  private serially<T>(step: () => Promise<T>): Promise<T> {
    const next = this.writes.then(step);
    this.writes = next.catch(() => undefined);
    return next;
  }
}
