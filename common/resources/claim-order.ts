/** The metadata a claim is ordered by. */
interface Claimant {
  metadata: { name: string; namespace?: string; creationTimestamp?: string | Date };
}

const createdAt = (c: Claimant): number => {
  const t = c.metadata.creationTimestamp;
  // A manifest without one (standalone mode) counts as oldest; the name then decides.
  return t === undefined ? 0 : new Date(t).getTime() || 0;
};

/**
 * The Gateway API's rule for conflicting claims: the oldest wins, then the first by
 * `namespace/name`. Stable whatever order the cache lists them in, so every operator replica
 * (and every rebuild) settles a conflict the same way.
 */
export function creationOrder(a: Claimant, b: Claimant): number {
  const byAge = createdAt(a) - createdAt(b);
  if (byAge !== 0) return byAge;
  const ka = `${a.metadata.namespace ?? ''}/${a.metadata.name}`;
  const kb = `${b.metadata.namespace ?? ''}/${b.metadata.name}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
