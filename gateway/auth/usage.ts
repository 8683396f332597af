import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';
import { redisKeys } from '../../common/redis/schema.js';

interface Pending {
  count: number;
  lastUsedMs: number;
}

/**
 * Last-used time and request counts per key, kept in memory on the request path (a map update)
 * and written to Redis in one pipeline every `flushMs`. A failed flush keeps the figures and
 * retries with the next one, so a Redis blip loses nothing.
 */
export class UsageRecorder {
  private pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
    private readonly flushMs: number,
  ) {}

  record(keyId: string, nowMs = Date.now()): void {
    const entry = this.pending.get(keyId);
    if (entry === undefined) this.pending.set(keyId, { count: 1, lastUsedMs: nowMs });
    else {
      entry.count++;
      entry.lastUsedMs = nowMs;
    }
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const pipeline = this.redis.pipeline();
    for (const [id, { count, lastUsedMs }] of batch) {
      const key = redisKeys.keyUsage(id);
      pipeline.hincrby(key, 'count', count);
      pipeline.hset(key, 'lastUsed', new Date(lastUsedMs).toISOString());
    }
    let results: Awaited<ReturnType<typeof pipeline.exec>>;
    try {
      results = await pipeline.exec();
    } catch (err) {
      // Put the figures back (merged with what arrived meanwhile) for the next flush.
      for (const [id, { count, lastUsedMs }] of batch) {
        const now = this.pending.get(id);
        if (now === undefined) this.pending.set(id, { count, lastUsedMs });
        else now.count += count;
      }
      this.log.warn({ err: (err as Error).message, keys: batch.size }, 'usage flush failed; will retry');
      return;
    }
    // A command refused by Redis (not a lost connection) would fail again: report, do not retry.
    const refused = results?.find(([err]) => err !== null);
    if (refused) this.log.error({ err: refused[0]?.message }, 'usage write refused by redis');
  }
}
