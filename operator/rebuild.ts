import type { Redis } from 'ioredis';
import { KEY_PREFIX, redisChannels, redisKeys } from '../common/redis/schema.js';
import type { KeyGrant, Route } from '../common/resources/grant.js';
import { KeyIndexWriter } from '../common/apikey/index-writer.js';
import type { ResourceSource } from './framework/resource-source.js';
import type { ApiKeyResource } from './controllers/apikey-controller.js';

async function* scan(redis: Redis, match: string): AsyncGenerator<string[]> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) yield keys;
  } while (cursor !== '0');
}

/**
 * Removes routes the operator wrote for resources that no longer back them (deleted while the
 * operator was down, or relabelled). Only routes whose source is a Model or Service of `namespace`
 * (or any, when unscoped) are considered: another operator's or the gateway's routes are left alone.
 */
export async function sweepStaleRoutes(
  redis: Redis,
  namespace: string | undefined,
  live: readonly string[],
): Promise<number> {
  const keep = new Set(live);
  let removed = 0;
  for await (const keys of scan(redis, `${KEY_PREFIX}route:*`)) {
    const values = await redis.mget(keys);
    for (const [i, key] of keys.entries()) {
      if (keep.has(key)) continue;
      let route: Route;
      try {
        route = JSON.parse(values[i] ?? 'null') as Route;
      } catch {
        continue;
      }
      const m = /^(model|service)\/([^/]+)\/[^/]+$/.exec(route?.source ?? '');
      if (!m || (namespace !== undefined && m[2] !== namespace)) continue;
      const script =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]); redis.call('PUBLISH', ARGV[2], KEYS[1]); return 1 end return 0";
      removed += (await redis.eval(script, 1, key, values[i] ?? '', redisChannels.routes)) as number;
    }
  }
  return removed;
}

/**
 * Removes key index entries whose ApiKey no longer exists (deleted while its finalizer was forced
 * off). The absence is confirmed by a fresh read of `key-<id>`, never by the cache alone: the
 * management API writes the resource before the entry, so a key just created is never swept.
 */
export async function sweepStaleKeys(
  redis: Redis,
  keys: ResourceSource<ApiKeyResource>,
  namespace: string,
): Promise<number> {
  const known = new Set(keys.list().map((k) => k.spec.hash));
  const writer = new KeyIndexWriter(redis);
  let removed = 0;
  const prefix = redisKeys.apiKey('');
  for await (const batch of scan(redis, `${prefix}*`)) {
    const values = await redis.mget(batch);
    for (const [i, key] of batch.entries()) {
      const hash = key.slice(prefix.length);
      if (known.has(hash)) continue;
      let grant: KeyGrant;
      try {
        grant = JSON.parse(values[i] ?? 'null') as KeyGrant;
      } catch {
        continue;
      }
      if (!grant?.id) continue;
      const fresh = await keys.read({ namespace, name: `key-${grant.id}` });
      if (fresh && fresh.spec.hash === hash) continue;
      await writer.delete({ hash, id: grant.id });
      removed++;
    }
  }
  return removed;
}
