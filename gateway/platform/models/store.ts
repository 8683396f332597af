import { TollgateError } from '../../../common/errors.js';
import type { Model, ModelSpec } from '../../../common/resources/model.js';

/**
 * Where the built-in `models` platform resource reads and writes Model resources: the API server
 * (kube-store.ts) or standalone mode's manifest directory (dir-store.ts). Both answer alike: the
 * same errors, the same metadata filled in, so the HTTP layer does not know which it talks to.
 */
export interface ModelStore {
  /** Every Model, by name. */
  list(): Promise<Model[]>;
  get(name: string): Promise<Model | undefined>;
  /** Throws `model_exists` (409) if the name is taken. */
  create(model: NewModel): Promise<Model>;
  /**
   * Replaces the spec (and the labels or annotations given), keeping the status. Throws
   * `unknown_model` (404) or, when `resourceVersion` is given and stale, `model_conflict` (409).
   */
  update(name: string, change: ModelChange): Promise<Model>;
}

export interface NewModel {
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  spec: ModelSpec;
}

export interface ModelChange {
  spec: ModelSpec;
  /** Replace the user's labels / annotations when given; Tollgate's own (`tollgate.dev/`) are kept. */
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** The version the caller read: the update is refused if the Model changed since. */
  resourceVersion?: string;
}

/** Labels and annotations under this prefix are Tollgate's; users cannot set or remove them. */
export const RESERVED_PREFIX = 'tollgate.dev/';

/** The user's entries replaced by `given`, Tollgate's own entries of `current` kept. */
export function mergeUserEntries(
  current: Record<string, string> | undefined,
  given: Record<string, string> | undefined,
): Record<string, string> | undefined {
  if (given === undefined) return current;
  const kept = Object.entries(current ?? {}).filter(([k]) => k.startsWith(RESERVED_PREFIX));
  const merged = { ...Object.fromEntries(kept), ...given };
  return Object.keys(merged).length === 0 ? undefined : merged;
}

export const modelNotFound = (name: string): TollgateError =>
  new TollgateError('unknown_model', `there is no model "${name}"; GET .../models lists them`);

export const modelExists = (name: string): TollgateError =>
  new TollgateError('model_exists', `model "${name}" already exists; update it with PUT .../models/${name}`, {
    field: 'metadata.name',
  });

export const modelConflict = (name: string): TollgateError =>
  new TollgateError(
    'model_conflict',
    `model "${name}" changed since metadata.resourceVersion was read; GET it again and resend your change`,
    { field: 'metadata.resourceVersion' },
  );
