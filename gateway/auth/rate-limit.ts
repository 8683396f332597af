import type { Redis } from 'ioredis';
import { TollgateError } from '../../common/errors.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { KeyGrant, RateLimit } from '../../common/resources/grant.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';

/** Whether a key has any limit to count (a key without one costs nothing here). */
export const isLimited = (grant: KeyGrant): boolean =>
  grant.rateLimit !== undefined || grant.limits !== undefined;

/** One window being counted: where, and what the 429 says when it is full. */
interface Window {
  key: string;
  limit: RateLimit;
  start: number;
  /** The named limit's name; undefined for the key's `rateLimit`. */
  name: string | undefined;
}

/**
 * Per-key fixed-window rate limits, counted in Redis so every replica shares one budget: the key's
 * `rateLimit` and each of its named `limits` (a burst per second and a quota per day, say); a call
 * must fit them all. One round trip, and no script: a transaction increments each window's counter
 * and gives it an expiry only if it has none (`EXPIRE … NX`, Redis 7). Sidecars count here too,
 * and their Redis user may not run scripts: a script of the sidecar's own could hold the
 * single-threaded server for as long as it likes.
 */
export class RateLimiter {
  constructor(private readonly redis: Redis) {}

  /** Resolves when the call fits the key's budgets; rejects with 429 (and Retry-After) or 503. */
  async take(grant: KeyGrant, nowMs = Date.now()): Promise<void> {
    const nowS = Math.floor(nowMs / 1000);
    const windows: Window[] = [];
    const add = (limit: RateLimit, name: string | undefined): void => {
      const start = nowS - (nowS % limit.windowSeconds);
      const key =
        name === undefined
          ? redisKeys.rateLimit(grant.id, start)
          : redisKeys.namedLimit(grant.id, name, start);
      windows.push({ key, limit, start, name });
    };
    if (grant.rateLimit !== undefined) add(grant.rateLimit, undefined);
    for (const l of grant.limits ?? []) add(l, l.name);
    if (windows.length === 0) return;
    let counts: number[];
    try {
      const tx = this.redis.multi();
      for (const w of windows) tx.incr(w.key).expire(w.key, w.limit.windowSeconds + 1, 'NX');
      const replies = await tx.exec();
      // Every step must have happened: a counter left without its expiry would refuse the key forever.
      const failed =
        replies === null ? new Error('the transaction was discarded') : replies.find(([e]) => e)?.[0];
      if (failed) throw failed;
      counts = windows.map((_, i) => Number(replies?.[2 * i]?.[1]));
    } catch (err) {
      throw redisUnavailable(err);
    }
    // The full window that frees last decides when to retry.
    let over: { w: Window; retryAfter: number } | undefined;
    windows.forEach((w, i) => {
      if ((counts[i] as number) <= w.limit.requests) return;
      const retryAfter = Math.max(1, w.start + w.limit.windowSeconds - nowS);
      if (over === undefined || retryAfter > over.retryAfter) over = { w, retryAfter };
    });
    if (over === undefined) return;
    const { w, retryAfter } = over;
    const what =
      w.name === undefined
        ? `this key allows ${w.limit.requests} requests per ${w.limit.windowSeconds} s`
        : `this key's limit "${w.name}" allows ${w.limit.requests} requests per ${w.limit.windowSeconds} s`;
    throw new TollgateError('rate_limited', `${what}; retry after ${retryAfter} s`, {
      headers: {
        'retry-after': String(retryAfter),
        ...(w.name === undefined ? {} : { 'tollgate-limit': w.name }),
      },
    });
  }
}
