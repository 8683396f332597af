import { createHash } from 'node:crypto';
import type { RouteCohort } from '../../common/resources/cohort.js';
import type { KeyGrant } from '../../common/resources/grant.js';

/**
 * Who makes a call, as a cohort sees it: its identity when its key has one (every key of a customer
 * is one caller), else the key, by the id its roll chain keeps (a rolled key stays where it was).
 */
export interface Caller {
  identity: string | undefined;
  key: string;
  /** The key's own id, which a cohort may list as well as the roll chain's first. */
  keyId: string;
}

export const callerOf = (grant: KeyGrant): Caller => ({
  identity: grant.identity?.missing === true ? undefined : grant.identity?.name,
  key: grant.countsAs ?? grant.id,
  keyId: grant.id,
});

/** A caller's place among 10,000 for one version's draw: the same on every gateway, call after call. */
function bucketOf(salt: string, caller: Caller): number {
  const subject = caller.identity === undefined ? `key:${caller.key}` : `identity:${caller.identity}`;
  return createHash('sha256').update(`${salt}\n${subject}`).digest().readUInt32BE(0) % 10_000;
}

/** Whether the caller is in the cohort: named, or drawn into its share of the others. */
export function inCohort(cohort: RouteCohort, caller: Caller): boolean {
  if (caller.identity !== undefined && cohort.identities?.includes(caller.identity) === true) return true;
  if (cohort.keys !== undefined && (cohort.keys.includes(caller.key) || cohort.keys.includes(caller.keyId)))
    return true;
  const share = cohort.percent ?? 0;
  return share > 0 && bucketOf(cohort.salt, caller) < share * 100;
}
