import { readKeyUsage, readRecentHours } from '../../common/apikey/usage.js';
import { apiKeyId, type ApiKey } from '../../common/resources/apikey.js';
import type { ManagementDeps } from './deps.js';
import { toApiKeyView, type ApiKeyView } from './views.js';

export type KeyRow = ApiKeyView & { requestsPerHour: number[] };

/**
 * Listing rows: each key's view with its usage, its small chart (requests per hour, 24 h), and
 * what `extra` adds from the key (an administrator's listing adds the owner).
 */
export async function keyRows<T extends object>(
  deps: ManagementDeps,
  keys: readonly ApiKey[],
  extra: (key: ApiKey) => T,
): Promise<Array<KeyRow & T>> {
  const ids = keys.map(apiKeyId);
  const [usage, recent] = await Promise.all([
    readKeyUsage(deps.redis, ids),
    readRecentHours(deps.redis, ids),
  ]);
  return keys.map((k) => ({
    ...toApiKeyView(k, usage.get(apiKeyId(k))),
    requestsPerHour: recent.get(apiKeyId(k)) ?? [],
    ...extra(k),
  }));
}
