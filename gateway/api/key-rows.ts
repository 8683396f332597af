import { readKeyUsage, readRecentHours } from '../../common/apikey/usage.js';
import { apiKeyId, type ApiKey } from '../../common/resources/apikey.js';
import type { ManagementDeps } from './deps.js';
import { toApiKeyView, type ApiKeyView } from './views.js';

export type KeyRow = ApiKeyView & { requestsPerHour: number[] };

/** Listing rows: each key's view with its usage, and its small chart (requests per hour, 24 h). */
export async function keyRows(deps: ManagementDeps, keys: readonly ApiKey[]): Promise<KeyRow[]> {
  const ids = keys.map(apiKeyId);
  const [usage, recent] = await Promise.all([
    readKeyUsage(deps.redis, ids),
    readRecentHours(deps.redis, ids),
  ]);
  return keys.map((k) => ({
    ...toApiKeyView(k, usage.get(apiKeyId(k))),
    requestsPerHour: recent.get(apiKeyId(k)) ?? [],
  }));
}
