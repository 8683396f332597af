import type { IdentityStore } from '../../common/identity/store.js';
import { toKeyGrant, type ApiKey } from '../../common/resources/apikey.js';
import type { KeyGrant } from '../../common/resources/grant.js';

/** A key's index entry as the management API writes it: with its identity's limits, read now. */
export async function keyGrantOf(identities: IdentityStore, key: ApiKey): Promise<KeyGrant> {
  const name = key.spec.identity;
  const identity = name === undefined ? undefined : await identities.get(name);
  return toKeyGrant(key, (n) => (n === name ? identity?.spec : undefined));
}
