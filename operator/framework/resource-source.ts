/**
 * Where the controllers read resources from and write status to. Two implementations: the API
 * server (informers; kube-source.ts) and, in standalone mode, a directory of manifests. Controllers
 * only see keys and this interface, so they cannot tell the two apart.
 */
import type { ObjectRef } from '../../common/kube/object-ref.js';

export type ResourceRef = ObjectRef;
export { refKey, parseRefKey } from '../../common/kube/object-ref.js';

/** Any resource: metadata is all the sources need to know. */
export interface Resource {
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    deletionTimestamp?: string | Date;
    finalizers?: string[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
}

/** What a watch tells: controller-runtime's event filter. */
export interface WatchOptions<T> {
  /**
   * Whether an update matters: when it says no, the cache takes the new object but no change is
   * delivered. Objects first seen and deletions are always delivered.
   */
  changed?: (before: T, after: T) => boolean;
}

/** A read-only, watched set of resources (workflow Services). */
export interface WatchedSource<T extends Resource> {
  /**
   * Delivers the ref of every object present, then of every change or deletion, until `stop`.
   * Resolves once the initial set is in the cache.
   */
  start(onChange: (ref: ResourceRef, deleted: T | undefined) => void, opts?: WatchOptions<T>): Promise<void>;
  stop(): Promise<void>;
  /** From the cache. */
  get(ref: ResourceRef): T | undefined;
  list(): T[];
}

/** A resource kind the operator owns the status and finalizers of. */
export interface ResourceSource<T extends Resource> extends WatchedSource<T> {
  /** From the source of truth, bypassing the cache: the fresh read after a conflict. */
  read(ref: ResourceRef): Promise<T | undefined>;
  /** Writes `obj.status`; throws ConflictError if `obj.metadata.resourceVersion` is stale. */
  updateStatus(obj: T): Promise<T>;
  /** Writes `metadata.finalizers`; throws ConflictError if `obj.metadata.resourceVersion` is stale. */
  updateFinalizers(obj: T, finalizers: string[]): Promise<T>;
}

export class ConflictError extends Error {
  constructor(what: string) {
    super(`${what} changed since it was read`);
    this.name = 'ConflictError';
  }
}

/** What withConflictRetry reads afresh on: another writer's change since the object was read. */
export const isConflict = (e: unknown): boolean => e instanceof ConflictError;

export class GoneError extends Error {
  constructor(what: string) {
    super(`${what} no longer exists`);
    this.name = 'GoneError';
  }
}

/** The `namespace/name` key in a route's source (`<kind>/<namespace>/<name>`), if of that kind. */
export const sourceKey = (kind: string, source: string): string | undefined =>
  source.startsWith(`${kind}/`) ? source.slice(kind.length + 1) : undefined;
