import { isDeepStrictEqual } from 'node:util';
import type { Resource } from './resource-source.js';

/**
 * Whether an update is one a reconciler acts on (controller-runtime's GenerationChangedPredicate,
 * with the metadata a reconciler reads): the spec (its generation), the labels and annotations,
 * the finalizers, a deletion begun. A change of status alone is not: the reconciler wrote it, and
 * waking on it would judge again what it has just judged.
 */
export function specOrMetadataChanged<T extends Resource>(before: T, after: T): boolean {
  const [a, b] = [before.metadata, after.metadata];
  // A source that counts no generation (none of the API server's kinds here) has every update matter.
  if (a.generation === undefined || b.generation === undefined) return true;
  return (
    a.generation !== b.generation ||
    String(a.deletionTimestamp ?? '') !== String(b.deletionTimestamp ?? '') ||
    !isDeepStrictEqual(a.finalizers ?? [], b.finalizers ?? []) ||
    !isDeepStrictEqual(a.labels ?? {}, b.labels ?? {}) ||
    !isDeepStrictEqual(a.annotations ?? {}, b.annotations ?? {})
  );
}
