import type { Redis } from 'ioredis';
import { redisUnavailable } from '../redis/unavailable.js';
import { keyChangeTag, redisChannels, redisKeys } from '../redis/schema.js';
import type { KeyGrant } from '../resources/grant.js';
import { sealOf, withSeal, type EntrySealer } from '../redis/sealed-entry.js';

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

  /** Writes and announces one entry; resolves with its seal (sealed-entry.ts `sealOf`). */
  async put(hash: string, grant: KeyGrant): Promise<string> {
    const key = redisKeys.apiKey(hash);
    const sealed = await this.sealer.seal(key, JSON.stringify(grant));
    await this.exec(
      'write',
      this.redis.multi().set(key, sealed).publish(redisChannels.keys, keyChangeTag(hash)),
    );
    return sealOf(sealed);
  }

  /**
   * Many entries at once, pipelined in batches and announced by no message each: for a rebuild,
   * which tells the gateways with the index marker instead (a cold start of 100,000 keys is a few
   * hundred round trips, not 100,000 transactions). An entry given the `seal` it was last written
   * with is written again unsigned; `written` hands back each entry with its seal, for next time.
   * Entries are taken from `entries` a batch at a time (never all made at once), and the next
   * batch is sealed while the last one is on its way to Redis.
   */
  async putMany<E extends { hash: string; grant: () => KeyGrant; seal?: string }>(
    entries: Iterable<E>,
    written: (entry: E, seal: string) => void = () => undefined,
  ): Promise<void> {
    const source = entries[Symbol.iterator]();
    const sealBatch = () => {
      const batch: E[] = [];
      for (let n = source.next(); !n.done; n = source.next()) if (batch.push(n.value) >= BATCH) break;
      if (batch.length === 0) return undefined;
      return Promise.all(
        batch.map(async (e) => {
          const key = redisKeys.apiKey(e.hash);
          const payload = JSON.stringify(e.grant());
          const sealed =
            e.seal === undefined ? await this.sealer.seal(key, payload) : withSeal(e.seal, payload);
          return { e, key, sealed };
        }),
      );
    };
    let next = sealBatch();
    while (next !== undefined) {
      const batch = await next;
      next = sealBatch();
      // A failed write still settles the batch being sealed, so no rejection is left unhandled.
      next?.catch(() => undefined);
      const pipeline = this.redis.pipeline();
      for (const { key, sealed } of batch) pipeline.set(key, sealed);
      await this.exec('write', pipeline);
      for (const { e, sealed } of batch) written(e, sealOf(sealed));
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
        .publish(redisChannels.keys, keyChangeTag(entry.hash)),
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
