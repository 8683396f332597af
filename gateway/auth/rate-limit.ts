import type { Redis } from 'ioredis';
import { counterTtlSeconds, creditPeriod } from '../../common/apikey/credits.js';
import { execAll } from '../../common/redis/transaction.js';
import { TollgateError } from '../../common/errors.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { KeyGrant, RateLimit } from '../../common/resources/grant.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';

/** Whether a key has any limit or credits to count (a key without costs nothing here). */
export const isLimited = (grant: KeyGrant): boolean =>
  grant.rateLimit !== undefined || grant.limits !== undefined || grant.credits !== undefined;

/** One window being counted: where, and what the 429 says when it is full. */
interface Window {
  key: string;
  limit: RateLimit;
  start: number;
  /** The named limit's name; undefined for the key's `rateLimit`. */
  name: string | undefined;
}

/**
 * Per-key fixed-window rate limits and credits, counted in Redis so every replica shares one
 * budget: the key's `rateLimit`, each of its named `limits` (a burst per second and a quota per
 * day, say) and its `credits`; a call must fit them all. One round trip, and no script: a
 * transaction increments each counter and gives it an expiry only if it has none (`EXPIRE … NX`,
 * Redis 7). Sidecars count here too, and their Redis user may not run scripts: a script of the
 * sidecar's own could hold the single-threaded server for as long as it likes.
 *
 * Credits are spent by the increment itself, so no call is admitted past them however many
 * replicas race (each sees its own count); a call refused, by them or by a limit, gives its credit
 * back, so a top-up or the next period is not eaten by refusals.
 */
export class RateLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly opts: { countsCredits: boolean } = { countsCredits: true },
  ) {}

  /** Resolves when the call fits the key's budgets; rejects with 429 (and Retry-After) or 503. */
  async take(grant: KeyGrant, nowMs = Date.now()): Promise<void> {
    const nowS = Math.floor(nowMs / 1000);
    // A rolled key counts on its chain's counters: rolling resets no quota.
    const account = grant.countsAs ?? grant.id;
    const windows: Window[] = [];
    const add = (limit: RateLimit, name: string | undefined): void => {
      const start = nowS - (nowS % limit.windowSeconds);
      const key =
        name === undefined
          ? redisKeys.rateLimit(account, start)
          : redisKeys.namedLimit(account, name, limit.windowSeconds, start);
      windows.push({ key, limit, start, name });
    };
    if (grant.rateLimit !== undefined) add(grant.rateLimit, undefined);
    for (const l of grant.limits ?? []) add(l, l.name);
    const credits = grant.credits;
    if (credits !== undefined && !this.opts.countsCredits) {
      throw new TollgateError(
        'credits_counted_centrally',
        'this key carries credits, which only the central gateway counts: call this service through it (/events/... or /v2/... on the gateway)',
      );
    }
    const period = credits === undefined ? undefined : creditPeriod(credits.refill, nowMs);
    const creditsKey = period === undefined ? undefined : redisKeys.creditsSpent(account, period.id);
    if (windows.length === 0 && creditsKey === undefined) return;
    let counts: number[];
    let spent = 0;
    try {
      const tx = this.redis.multi();
      for (const w of windows) tx.incr(w.key).expire(w.key, w.limit.windowSeconds + 1, 'NX');
      if (creditsKey !== undefined && period !== undefined) {
        tx.incr(creditsKey);
        const ttl = counterTtlSeconds(period, nowMs);
        if (ttl !== undefined) tx.expire(creditsKey, ttl, 'NX');
      }
      const replies = await execAll(tx);
      counts = windows.map((_, i) => Number(replies[2 * i]));
      if (creditsKey !== undefined) spent = Number(replies[2 * windows.length]);
    } catch (err) {
      throw redisUnavailable(err);
    }
    if (credits !== undefined && creditsKey !== undefined && spent > credits.amount) {
      await this.giveBack(creditsKey);
      throw creditsExhausted(credits, period?.endsAtMs, nowMs);
    }
    // The full window that frees last decides when to retry.
    let over: { w: Window; retryAfter: number } | undefined;
    windows.forEach((w, i) => {
      if ((counts[i] as number) <= w.limit.requests) return;
      const retryAfter = Math.max(1, w.start + w.limit.windowSeconds - nowS);
      if (over === undefined || retryAfter > over.retryAfter) over = { w, retryAfter };
    });
    if (over === undefined) return;
    if (creditsKey !== undefined) await this.giveBack(creditsKey);
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

  /** A refused call's credit back; should Redis fail now, it stays spent (never one too many). */
  private async giveBack(creditsKey: string): Promise<void> {
    await this.redis.decr(creditsKey).catch(() => undefined);
  }
}

function creditsExhausted(
  credits: NonNullable<KeyGrant['credits']>,
  refillAtMs: number | undefined,
  nowMs: number,
): TollgateError {
  if (refillAtMs === undefined) {
    // No refill will come: a retry helps only after a top-up, so clients are told to wait long.
    return new TollgateError(
      'credits_exhausted',
      `this key's ${credits.amount} credits are spent; an administrator can add more`,
      { headers: { 'retry-after': '3600' } },
    );
  }
  const per = credits.refill === 'daily' ? 'day' : 'month';
  return new TollgateError(
    'credits_exhausted',
    `this key's ${credits.amount} credits for this ${per} are spent; they refill at ${new Date(refillAtMs).toISOString()}`,
    { headers: { 'retry-after': String(Math.max(1, Math.ceil((refillAtMs - nowMs) / 1000))) } },
  );
}
