import type { TollgateError } from '../errors.js';

/** What every stored custom resource has: a name, and the API server's bookkeeping. */
export interface StoredResource {
  metadata: {
    name: string;
    uid?: string | undefined;
    resourceVersion?: string | undefined;
    creationTimestamp?: string | Date | undefined;
    deletionTimestamp?: string | Date | undefined;
  };
}

/**
 * A kind of custom resource the management API writes besides keys (identities, webhooks), few
 * enough to list whole: on the API server (kube-resource-store.ts) or as manifests in the
 * standalone state directory (dir-resource-store.ts), alike to their callers.
 */
export interface ResourceStore<T extends StoredResource> {
  /** Stores a new object; `exists` when the name is taken. */
  create(obj: T): Promise<T>;
  get(name: string): Promise<T | undefined>;
  list(): Promise<T[]>;
  /** Writes an object read from this store; `changed` if it changed or went meanwhile. */
  update(obj: T): Promise<T>;
  /** Removes exactly the object read; false if it is gone; `changed` if it was replaced. */
  delete(obj: T): Promise<boolean>;
}

/** How a kind's store names itself and its conflicts in errors. */
export interface ResourceKind {
  /** The kind, in messages: "Identity". */
  kind: string;
  /** The CRD file to point at when the API server refuses. */
  crdFile: string;
  exists(name: string): TollgateError;
  changed(name: string): TollgateError;
}
