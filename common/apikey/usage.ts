import type { Redis } from 'ioredis';
import { redisUnavailable } from '../redis/unavailable.js';
import { redisKeys } from '../redis/schema.js';

/** A key's usage figures as the gateway records them in `tg:usage:<id>`. */
export interface KeyUsage {
  lastUsed?: string;
  count: number;
}

/** Usage of several keys in one round trip; a key never used has no entry. */
export async function readKeyUsage(redis: Redis, ids: readonly string[]): Promise<Map<string, KeyUsage>> {
  const usage = new Map<string, KeyUsage>();
  if (ids.length === 0) return usage;
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.hmget(redisKeys.keyUsage(id), 'lastUsed', 'count');
  let results: Array<[Error | null, unknown]> | null;
  try {
    results = await pipeline.exec();
  } catch (cause) {
    throw redisUnavailable(cause, USAGE_UNREADABLE);
  }
  const failed = results?.find(([err]) => err !== null)?.[0];
  if (results === null || failed) throw redisUnavailable(failed, USAGE_UNREADABLE);
  ids.forEach((id, i) => {
    const value = results[i]?.[1];
    if (!Array.isArray(value)) return;
    const [lastUsed, count] = value as Array<string | null>;
    if (lastUsed === null && count === null) return;
    const entry: KeyUsage = { count: Number(count ?? 0) || 0 };
    if (lastUsed !== null && lastUsed !== undefined) entry.lastUsed = lastUsed;
    usage.set(id, entry);
  });
  return usage;
}

const USAGE_UNREADABLE = 'could not read key usage from Redis';
