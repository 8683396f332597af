import type { Redis } from 'ioredis';
import { redisKeys } from '../redis/schema.js';
import type { EntryVerifier } from '../redis/sealed-entry.js';
import { keyGrantSchema, parseStored, type KeyGrant } from '../resources/grant.js';

/**
 * The grant of the key with this hash, as the index holds it sealed; undefined when there is none
 * or it is not one the operator sealed. For the management side (a leak report names a key by its
 * value); the gateway's hot path has its own cached reader (gateway/auth/key-check.ts).
 */
export async function readKeyGrant(
  redis: Redis,
  verifier: EntryVerifier,
  hash: string,
): Promise<KeyGrant | undefined> {
  const redisKey = redisKeys.apiKey(hash);
  const raw = await redis.get(redisKey);
  if (raw === null) return undefined;
  const opened = verifier.open(redisKey, raw);
  if (!opened.ok) return undefined;
  const parsed = parseStored(keyGrantSchema, opened.payload);
  return parsed.ok ? parsed.value : undefined;
}
