import type { Redis, Result } from 'ioredis';
import { TollgateError } from '../../common/errors.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';

/**
 * Per-key fixed-window rate limit, counted in Redis so every replica shares one budget. One
 * round trip: the script increments the window's counter and sets its expiry on first use.
 * Keys without a limit cost nothing here.
 */
const TAKE = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    tollgateRateTake(key: string, windowSeconds: number): Result<number, Context>;
  }
}

export class RateLimiter {
  constructor(private readonly redis: Redis) {
    redis.defineCommand('tollgateRateTake', { numberOfKeys: 1, lua: TAKE });
  }

  /** Resolves when the call fits the key's budget; rejects with 429 (and Retry-After) or 503. */
  async take(grant: KeyGrant, nowMs = Date.now()): Promise<void> {
    const limit = grant.rateLimit;
    if (limit === undefined) return;
    const nowS = Math.floor(nowMs / 1000);
    const windowStart = nowS - (nowS % limit.windowSeconds);
    let count: number;
    try {
      count = await this.redis.tollgateRateTake(
        redisKeys.rateLimit(grant.id, windowStart),
        limit.windowSeconds + 1,
      );
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
