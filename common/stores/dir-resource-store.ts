import type { z } from 'zod';
import { ManifestExistsError, type ManifestCollection, type ManifestDir } from '../resources/manifest-dir.js';
import { apiServerTimestamp } from '../resources/object-meta.js';
import type { ResourceKind, ResourceStore, StoredResource } from './resource-store.js';

/** Manifests of one kind in the standalone state directory (`<dir>/<plural>/<name>.yaml`). */
export class DirResourceStore<T extends StoredResource> implements ResourceStore<T> {
  private readonly manifests: ManifestCollection<T>;
  /** Writes run one at a time, so a version check and its write are one step. */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    dir: ManifestDir,
    plural: string,
    schema: z.ZodType<T>,
    private readonly kind: ResourceKind,
  ) {
    this.manifests = dir.collection(plural, schema);
  }

  async create(obj: T): Promise<T> {
    try {
      return await this.manifests.create({
        ...obj,
        metadata: { ...obj.metadata, creationTimestamp: apiServerTimestamp(), resourceVersion: '1' },
      });
    } catch (e) {
      if (e instanceof ManifestExistsError) throw this.kind.exists(obj.metadata.name);
      throw e;
    }
  }

  get(name: string): Promise<T | undefined> {
    return this.manifests.get(name);
  }

  list(): Promise<T[]> {
    return this.manifests.list();
  }

  update(obj: T): Promise<T> {
    return this.serially(async () => {
      const current = await this.current(obj);
      const version = Number(current.metadata.resourceVersion ?? '0') + 1;
      return this.manifests.put({ ...obj, metadata: { ...obj.metadata, resourceVersion: String(version) } });
    });
  }

  delete(obj: T): Promise<boolean> {
    return this.serially(async () => {
      if ((await this.manifests.get(obj.metadata.name)) === undefined) return false;
      await this.current(obj);
      return this.manifests.delete(obj.metadata.name);
    });
  }

  /** The stored object, if it is still the one the caller read. */
  private async current(obj: T): Promise<T> {
    const current = await this.manifests.get(obj.metadata.name);
    if (
      current === undefined ||
      (current.metadata.resourceVersion ?? '0') !== (obj.metadata.resourceVersion ?? '0')
    )
      throw this.kind.changed(obj.metadata.name);
    return current;
  }

  private serially<R>(step: () => Promise<R>): Promise<R> {
    const next = this.writes.then(step);
    this.writes = next.catch(() => undefined);
    return next;
  }
}
