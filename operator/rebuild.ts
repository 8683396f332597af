import type { Redis } from 'ioredis';
import {
  KEY_PREFIX,
  keyChangeTag,
  redisChannels,
  redisKeys,
  routeChangeTag,
} from '../common/redis/schema.js';
import { keyGrantSchema, parseStored, routeSchema } from '../common/resources/grant.js';
import type { EntryVerifier } from '../common/redis/sealed-entry.js';
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

// Deletes KEYS[1] only if it still holds ARGV[1], and tells the channel ARGV[2] (ARGV[3]: what to
// announce), so a value rewritten meanwhile is left alone.
const DELETE_IF_SAME =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]); redis.call('PUBLISH', ARGV[2], ARGV[3]); return 1 end return 0";

/**
 * Removes routes the operator wrote for resources that no longer back them (deleted while the
 * operator was down, or relabelled; not those of a resource whose reconcile is still to settle), and entries under the route prefix that do not verify (forged
 * or corrupt: no gateway follows them). Only routes whose source is a Model or Service of
 * `namespace` (or any, when unscoped) are considered: another operator's routes are left alone.
 */
export async function sweepStaleRoutes(
  redis: Redis,
  verifier: EntryVerifier,
  namespace: string | undefined,
  /** The routes the reconcilers hold: read again for each batch, as a reconcile may add one meanwhile. */
  live: () => readonly string[],
  /** A route whose resource this says is not settled yet is kept (its reconcile decides). */
  unsettled: (source: string) => boolean = () => false,
): Promise<number> {
  let removed = 0;
  for await (const keys of scan(redis, `${KEY_PREFIX}route:*`)) {
    const keep = new Set(live());
    const values = await redis.mget(keys);
    for (const [i, key] of keys.entries()) {
      const value = values[i];
      if (keep.has(key) || value === null || value === undefined) continue;
      const opened = verifier.open(key, value);
      const route = opened.ok ? parseStored(routeSchema, opened.payload) : undefined;
      if (route?.ok === true) {
        const m = /^(model|service)\/([^/]+)\/[^/]+$/.exec(route.value.source ?? '');
        if (!m || (namespace !== undefined && m[2] !== namespace)) continue;
        if (unsettled(route.value.source!)) continue;
      } else if (namespace !== undefined) continue; // perhaps another installation's, with its own key
      const tag = routeChangeTag(key);
      removed += (await redis.eval(DELETE_IF_SAME, 1, key, value, redisChannels.routes, tag)) as number;
    }
  }
  return removed;
}

/**
 * Removes key index entries whose ApiKey no longer exists (deleted while its finalizer was forced
 * off), and entries that do not verify (forged or corrupt: no gateway believes them). The absence
 * is confirmed by a fresh read of `key-<id>`, never by the cache alone: the management API writes
 * the resource before the entry, so a key just created is never swept.
 */
export async function sweepStaleKeys(
  redis: Redis,
  verifier: EntryVerifier,
  keys: ResourceSource<ApiKeyResource>,
  namespace: string,
): Promise<number> {
  const known = new Set(keys.list().map((k) => k.spec.hash));
  let removed = 0;
  const prefix = redisKeys.apiKey('');
  for await (const batch of scan(redis, `${prefix}*`)) {
    const values = await redis.mget(batch);
    for (const [i, key] of batch.entries()) {
      const hash = key.slice(prefix.length);
      const value = values[i];
      if (known.has(hash) || value === null || value === undefined) continue;
      const opened = verifier.open(key, value);
      const grant = opened.ok ? parseStored(keyGrantSchema, opened.payload) : undefined;
      if (grant?.ok === true) {
        const fresh = await keys.read({ namespace, name: `key-${grant.value.id}` });
        if (fresh && fresh.spec.hash === hash) continue;
      }
      const gone = (await redis.eval(
        DELETE_IF_SAME,
        1,
        key,
        value,
        redisChannels.keys,
        keyChangeTag(hash),
      )) as number;
      // A real key's usage figures die with it; a forged entry's id names nobody's.
      if (gone === 1 && grant?.ok === true) await redis.del(redisKeys.keyUsage(grant.value.id));
      removed += gone;
    }
  }
  return removed;
}
