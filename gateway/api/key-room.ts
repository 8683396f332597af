import { DEFAULT_MAX_KEYS_PER_OWNER } from '../../common/apikey/store.js';
import { TollgateError } from '../../common/errors.js';
import type { Caller } from '../auth/oidc.js';
import type { ManagementDeps } from './deps.js';

/**
 * A user who is not an administrator has at most `maxKeysPerOwner` live keys, made or rolled:
 * each is a resource every gateway replica and the operator keep in memory, and etcd stores, so
 * one user's script must not be able to fill them for everyone. Calls made at once may pass it by
 * a few.
 */
export async function checkRoom(
  deps: Pick<ManagementDeps, 'store' | 'maxKeysPerOwner'>,
  caller: Caller,
): Promise<void> {
  if (caller.admin) return;
  const max = deps.maxKeysPerOwner ?? DEFAULT_MAX_KEYS_PER_OWNER;
  const have = await deps.store.countOf(caller.subject);
  if (have >= max)
    throw new TollgateError(
      'too_many_keys',
      `you have ${have} keys, the most one user may have (${max}); delete keys you no longer use first (rolled and expired keys count until deleted; GET /api/v1/apikeys lists them)`,
    );
}
