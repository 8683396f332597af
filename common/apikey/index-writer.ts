import type { Redis } from 'ioredis';
import { redisUnavailable } from '../redis/unavailable.js';
import { redisChannels, redisKeys } from '../redis/schema.js';
import type { KeyGrant } from '../resources/grant.js';
import type { EntrySealer } from '../redis/sealed-entry.js';

/** Entries per pipelined round trip in a bulk write. */
const BATCH = 500;

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

  /** Writes and announces one entry; resolves with the sealed value written. */
  async put(hash: string, grant: KeyGrant): Promise<string> {
    const key = redisKeys.apiKey(hash);
    const sealed = this.sealer.seal(key, JSON.stringify(grant));
    await this.exec('write', this.redis.multi().set(key, sealed).publish(redisChannels.keys, hash));
    return sealed;
  }

  /**
   * Many entries at once, pipelined in batches and announced by no message each: for a rebuild,
   * which tells the gateways with the index marker instead (a cold start of 100,000 keys is a few
   * hundred round trips, not 100,000 transactions). `sealed` hands back what was written, for the
   * caller to reuse the next time the same entries are written.
   */
  async putMany(
    entries: ReadonlyArray<{ hash: string; grant: KeyGrant; sealed?: string }>,
    written: (hash: string, sealed: string) => void = () => undefined,
  ): Promise<void> {
    for (let at = 0; at < entries.length; at += BATCH) {
      const batch = this.redis.pipeline();
      for (const e of entries.slice(at, at + BATCH)) {
        const key = redisKeys.apiKey(e.hash);
        const sealed = e.sealed ?? this.sealer.seal(key, JSON.stringify(e.grant));
        batch.set(key, sealed);
        written(e.hash, sealed);
      }
      await this.exec('write', batch);
    }
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

  private async exec(
    verb: string,
    multi: ReturnType<Redis['multi']> | ReturnType<Redis['pipeline']>,
  ): Promise<void> {
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
