import type { IdentityStore } from '../../common/identity/store.js';
import type { EntrySealer } from '../../common/redis/sealed-entry.js';
import { toKeyGrant, type ApiKey } from '../../common/resources/apikey.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { identityCounterAccount, type Identity } from '../../common/resources/identity.js';

/**
 * A key's index entry as the management API writes it: with its identity's limits, read now
 * unless the caller just read that identity (`known`).
 */
export async function keyGrantOf(
  deps: { identities: IdentityStore; sealer: EntrySealer },
  key: ApiKey,
  known?: Identity,
): Promise<KeyGrant> {
  const name = key.spec.identity;
  const identity =
    name === undefined ? undefined : known?.metadata.name === name ? known : await deps.identities.get(name);
  return toKeyGrant(key, (n) => ({
    spec: n === name ? identity?.spec : undefined,
    account: identityCounterAccount(deps.sealer, n),
  }));
}
