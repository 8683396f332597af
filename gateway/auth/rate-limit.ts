import type { Redis } from 'ioredis';
import { TollgateError } from '../../common/errors.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';

/**
 * Per-key fixed-window rate limit, counted in Redis so every replica shares one budget. One
 * round trip, and no script: a transaction increments the window's counter and gives it an expiry
 * only if it has none (`EXPIRE … NX`, Redis 7). Sidecars count here too, and their Redis user may
 * not run scripts: a script of the sidecar's own could hold the single-threaded server for as long
 * as it likes. Keys without a limit cost nothing here.
 */
export class RateLimiter {
  constructor(private readonly redis: Redis) {}

  /** Resolves when the call fits the key's budget; rejects with 429 (and Retry-After) or 503. */
  async take(grant: KeyGrant, nowMs = Date.now()): Promise<void> {
    const limit = grant.rateLimit;
    if (limit === undefined) return;
    const nowS = Math.floor(nowMs / 1000);
    const windowStart = nowS - (nowS % limit.windowSeconds);
    let count: number;
    try {
      const key = redisKeys.rateLimit(grant.id, windowStart);
      const replies = await this.redis
        .multi()
        .incr(key)
        .expire(key, limit.windowSeconds + 1, 'NX')
        .exec();
      // Both must have happened: a counter left without its expiry would refuse the key forever.
      const failed =
        replies === null ? new Error('the transaction was discarded') : replies.find(([e]) => e)?.[0];
      if (failed) throw failed;
      count = Number(replies?.[0]?.[1]);
    } catch (err) {
      throw redisUnavailable(err);
    }
    if (count > limit.requests) {
      const retryAfter = Math.max(1, windowStart + limit.windowSeconds - nowS);
      throw new TollgateError(
        'rate_limited',
        `this key allows ${limit.requests} requests per ${limit.windowSeconds} s; retry after ${retryAfter} s`,
        { headers: { 'retry-after': String(retryAfter) } },
      );
    }
  }
}
