import type { Logger } from '../../common/logger.js';
import type { ManifestCollection } from '../../common/resources/manifest-dir.js';
import { manifestUid, nextGeneration, nextResourceVersion } from '../../common/resources/object-meta.js';
import {
  ConflictError,
  GoneError,
  type Resource,
  type ResourceRef,
  type ResourceSource,
  type WatchOptions,
} from './resource-source.js';

/**
 * Standalone mode's ResourceSource: manifests in a directory (common/resources/manifest-dir.ts)
 * instead of the API server. What the API server would fill in is filled in here: the namespace
 * (`default`), a uid, a generation that moves when the spec changes, and a resourceVersion that
 * moves on every write this source makes, so the controllers' conflict handling works unchanged.
 */
type Manifested = Resource & { metadata: { name: string }; spec?: unknown; status?: unknown };

const NAMESPACE = 'default';

export class ManifestResourceSource<T extends Manifested> implements ResourceSource<T> {
  private readonly cache = new Map<string, T>();
  private unwatch: (() => void) | undefined;

  constructor(
    private readonly collection: ManifestCollection<T>,
    private readonly log: Logger,
  ) {}

  private complete(obj: T, previous: T | undefined): T {
    const generation =
      previous === undefined
        ? (obj.metadata.generation ?? 1)
        : nextGeneration(previous.metadata.generation, previous.spec, obj.spec);
    return {
      ...obj,
      metadata: {
        ...obj.metadata,
        namespace: NAMESPACE,
        uid: obj.metadata.uid ?? manifestUid(obj.metadata.name),
        generation,
        resourceVersion: obj.metadata.resourceVersion ?? '1',
      },
    };
  }

  async start(
    onChange: (ref: ResourceRef, deleted: T | undefined) => void,
    opts: WatchOptions<T> = {},
  ): Promise<void> {
    for (const obj of await this.collection.list()) {
      this.cache.set(obj.metadata.name, this.complete(obj, undefined));
    }
    this.unwatch = await this.collection.watch((event) => {
      const ref = { namespace: NAMESPACE, name: event.name };
      if (event.type === 'delete') {
        const gone = this.cache.get(event.name);
        this.cache.delete(event.name);
        onChange(ref, gone);
        return;
      }
      const before = this.cache.get(event.name);
      const after = this.complete(event.object, before);
      this.cache.set(event.name, after);
      if (before !== undefined && opts.changed?.(before, after) === false) return;
      onChange(ref, undefined);
    });
    for (const name of this.cache.keys()) onChange({ namespace: NAMESPACE, name }, undefined);
    this.log.debug({ dir: this.collection.dir, count: this.cache.size }, 'manifests loaded');
  }

  async stop(): Promise<void> {
    this.unwatch?.();
  }

  get(ref: ResourceRef): T | undefined {
    return ref.namespace === NAMESPACE ? this.cache.get(ref.name) : undefined;
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  async read(ref: ResourceRef): Promise<T | undefined> {
    const fresh = await this.collection.get(ref.name);
    return fresh === undefined ? undefined : this.complete(fresh, this.cache.get(ref.name));
  }

  updateStatus(obj: T): Promise<T> {
    return this.write(obj, (fresh) => ({ ...fresh, status: obj.status }));
  }

  updateFinalizers(obj: T, finalizers: string[]): Promise<T> {
    return this.write(obj, (fresh) => ({ ...fresh, metadata: { ...fresh.metadata, finalizers } }));
  }

  private async write(obj: T, change: (fresh: T) => T): Promise<T> {
    const what = `${this.collection.plural}/${obj.metadata.name}`;
    const fresh = await this.read({ namespace: NAMESPACE, name: obj.metadata.name });
    if (fresh === undefined) throw new GoneError(what);
    if (fresh.metadata.resourceVersion !== obj.metadata.resourceVersion) throw new ConflictError(what);
    const next = change(fresh);
    const written = {
      ...next,
      metadata: {
        ...next.metadata,
        resourceVersion: nextResourceVersion(fresh.metadata.resourceVersion),
      },
    };
    await this.collection.put(written);
    this.cache.set(obj.metadata.name, written);
    return written;
  }
}
