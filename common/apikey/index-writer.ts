import type { Redis } from 'ioredis';
import { redisUnavailable } from '../redis/unavailable.js';
import { redisChannels, redisKeys } from '../redis/schema.js';
import type { KeyGrant } from '../resources/grant.js';
import type { EntrySealer } from '../redis/sealed-entry.js';

/**
 * Writes the Redis key index (`tg:key:<sha256>` → JSON KeyGrant) and announces every change on the
 * keys channel, in one MULTI, so no gateway replica can keep serving a cached entry that Redis no
 * longer holds. Used by the management API (a key works, or stops, at once) and by the operator
 * (rebuilding the index from ApiKey resources). Every entry is sealed (common/redis/sealed-entry.ts):
 * readers believe nothing else.
 */
export class KeyIndexWriter {
  constructor(
    private readonly redis: Redis,
    private readonly sealer: EntrySealer,
  ) {}

  async put(hash: string, grant: KeyGrant): Promise<void> {
    const key = redisKeys.apiKey(hash);
    await this.exec(
      'write',
      this.redis
        .multi()
        .set(key, this.sealer.seal(key, JSON.stringify(grant)))
        .publish(redisChannels.keys, hash),
    );
  }

  /** Removes a key's index entry and its usage figures (both die with the key). */
  async delete(entry: { hash: string; id: string }): Promise<void> {
    await this.exec(
      'delete',
      this.redis
        .multi()
        .del(redisKeys.apiKey(entry.hash))
        .del(redisKeys.keyUsage(entry.id))
        .publish(redisChannels.keys, entry.hash),
    );
  }

  private async exec(verb: string, multi: ReturnType<Redis['multi']>): Promise<void> {
    let results: Array<[Error | null, unknown]> | null;
    try {
      results = await multi.exec();
    } catch (cause) {
      throw redisUnavailable(cause, `could not ${verb} the key index in Redis`);
    }
    const failed = results?.find(([err]) => err !== null)?.[0];
    if (results === null || failed)
      throw redisUnavailable(
        failed ?? new Error('transaction aborted'),
        `could not ${verb} the key index in Redis`,
      );
  }
}
