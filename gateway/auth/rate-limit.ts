import type { Redis } from 'ioredis';
import { counterTtlSeconds, creditPeriod, type CreditPeriod } from '../../common/apikey/credits.js';
import { execAll } from '../../common/redis/transaction.js';
import { TollgateError } from '../../common/errors.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { KeyGrant, NamedLimit, RateLimit } from '../../common/resources/grant.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';

/** Whether a key has any limit or credits to count (a key without costs nothing here). */
export const isLimited = (grant: KeyGrant): boolean =>
  grant.rateLimit !== undefined ||
  grant.limits !== undefined ||
  grant.credits !== undefined ||
  grant.identity?.limits !== undefined ||
  grant.identity?.credits !== undefined;

/** Whose budget a window or credits belong to, as the 429 names it. */
type Holder = { kind: 'key' } | { kind: 'identity'; name: string };

/** One window being counted: where, and what the 429 says when it is full. */
interface Window {
  key: string;
  limit: RateLimit;
  start: number;
  /** The named limit's name; undefined for the key's `rateLimit`. */
  name: string | undefined;
  holder: Holder;
}

/** Credits being spent: whose, their counter, and the period it counts. */
interface Spend {
  key: string;
  credits: Credits;
  period: CreditPeriod;
  holder: Holder;
}

type Credits = NonNullable<KeyGrant['credits']>;

/**
 * What the limiter tells the webhooks of (gateway/webhooks): a limit's first refusal in its window,
 * and credits running low or spent by an admitted call. Each is read off the counters' own replies
 * (the call whose INCR reached the mark), so exactly one call among all replicas reports it.
 */
export interface LimitNotice {
  type: 'key.rate_limited' | 'credits.low' | 'credits.exhausted';
  grant: KeyGrant;
  /** The identity whose limit or credits it is; absent for the key's own. */
  identity?: string;
  detail: Record<string, string | number>;
}

/** Credits are "low" once at most a tenth of them (at least one) is left. */
const lowMark = (amount: number): number => amount - Math.max(1, Math.floor(amount / 10));

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
    private readonly opts: { countsCredits: boolean; notices?: (n: LimitNotice) => void } = {
      countsCredits: true,
    },
  ) {}

  /** Resolves when the call fits the key's budgets; rejects with 429 (and Retry-After) or 503. */
  async take(grant: KeyGrant, cost = 1, nowMs = Date.now()): Promise<void> {
    // A price below 1 would admit calls for nothing, or make credits: never from a setting.
    if (!Number.isInteger(cost) || cost < 1)
      throw new RangeError(`a call costs a whole number >= 1, not ${cost}`);
    const nowS = Math.floor(nowMs / 1000);
    const windows: Window[] = [];
    const spends: Spend[] = [];
    const count = (
      account: string,
      holder: Holder,
      budget: { rateLimit?: RateLimit; limits?: NamedLimit[]; credits?: Credits },
    ): void => {
      const add = (limit: RateLimit, name: string | undefined): void => {
        const start = nowS - (nowS % limit.windowSeconds);
        const key =
          name === undefined
            ? redisKeys.rateLimit(account, start)
            : redisKeys.namedLimit(account, name, limit.windowSeconds, start);
        windows.push({ key, limit, start, name, holder });
      };
      if (budget.rateLimit !== undefined) add(budget.rateLimit, undefined);
      for (const l of budget.limits ?? []) add(l, l.name);
      if (budget.credits === undefined) return;
      if (!this.opts.countsCredits) {
        throw new TollgateError(
          'credits_counted_centrally',
          `${holder.kind === 'key' ? 'this key carries' : `this key's identity "${holder.name}" carries`} credits, which only the central gateway counts: call this service through it (/events/... or /v2/... on the gateway)`,
        );
      }
      const period = creditPeriod(budget.credits.refill, nowMs);
      spends.push({
        key: redisKeys.creditsSpent(account, period.id),
        credits: budget.credits,
        period,
        holder,
      });
    };
    // A rolled key counts on its chain's counters: rolling resets no quota.
    count(grant.countsAs ?? grant.id, { kind: 'key' }, grant);
    const { identity } = grant;
    if (identity !== undefined) count(identity.account, { kind: 'identity', name: identity.name }, identity);
    if (windows.length === 0 && spends.length === 0) return;
    let counts: number[];
    let spent: number[];
    try {
      const tx = this.redis.multi();
      // Where each INCR's reply is: credits that never refill get no EXPIRE after theirs.
      const at: number[] = [];
      let n = 0;
      for (const w of windows) {
        tx.incr(w.key).expire(w.key, w.limit.windowSeconds + 1, 'NX');
        at.push(n);
        n += 2;
      }
      for (const s of spends) {
        tx.incrby(s.key, cost);
        at.push(n++);
        const ttl = counterTtlSeconds(s.period, nowMs);
        if (ttl !== undefined) {
          tx.expire(s.key, ttl, 'NX');
          n++;
        }
      }
      const replies = await execAll(tx);
      counts = windows.map((_, i) => Number(replies[at[i] as number]));
      spent = spends.map((_, i) => Number(replies[at[windows.length + i] as number]));
    } catch (err) {
      throw redisUnavailable(err);
    }
    this.tellBreaches(grant, windows, counts);
    const broke = spends.find((s, i) => (spent[i] as number) > s.credits.amount);
    if (broke !== undefined) {
      await this.giveBack(spends, cost);
      const left = broke.credits.amount - ((spent[spends.indexOf(broke)] as number) - cost);
      throw creditsExhausted(broke, cost, left, nowMs);
    }
    // The full window that frees last decides when to retry.
    let over: { w: Window; retryAfter: number } | undefined;
    windows.forEach((w, i) => {
      if ((counts[i] as number) <= w.limit.requests) return;
      const retryAfter = Math.max(1, w.start + w.limit.windowSeconds - nowS);
      if (over === undefined || retryAfter > over.retryAfter) over = { w, retryAfter };
    });
    if (over === undefined) {
      this.tellCredits(grant, spends, spent, cost);
      return;
    }
    await this.giveBack(spends, cost);
    const { w, retryAfter } = over;
    const whose = w.holder.kind === 'key' ? 'this key' : `this key's identity "${w.holder.name}"`;
    const what =
      w.name === undefined
        ? `${whose} allows ${w.limit.requests} requests per ${w.limit.windowSeconds} s`
        : `${whose}${w.holder.kind === 'key' ? "'s" : ''} limit "${w.name}" allows ${w.limit.requests} requests per ${w.limit.windowSeconds} s`;
    throw new TollgateError('rate_limited', `${what}; retry after ${retryAfter} s`, {
      headers: {
        'retry-after': String(retryAfter),
        ...(w.name === undefined ? {} : { 'tollgate-limit': w.name }),
        ...(w.holder.kind === 'identity' ? { 'tollgate-identity': w.holder.name } : {}),
      },
    });
  }

  private tellBreaches(grant: KeyGrant, windows: Window[], counts: number[]): void {
    const tell = this.opts.notices;
    if (tell === undefined) return;
    windows.forEach((w, i) => {
      if (counts[i] !== w.limit.requests + 1) return;
      tell({
        type: 'key.rate_limited',
        grant,
        ...(w.holder.kind === 'identity' ? { identity: w.holder.name } : {}),
        detail: {
          limit: w.name ?? 'rateLimit',
          requests: w.limit.requests,
          windowSeconds: w.limit.windowSeconds,
        },
      });
    });
  }

  /**
   * Credits low: the call whose spending crossed the mark (one call, among all replicas). Spent:
   * the call after which less is left than it cost (exactly one call when every call costs alike).
   */
  private tellCredits(grant: KeyGrant, spends: Spend[], spent: number[], cost: number): void {
    const tell = this.opts.notices;
    if (tell === undefined) return;
    spends.forEach((s, i) => {
      const { amount } = s.credits;
      const now = spent[i] as number;
      const mark = lowMark(amount);
      const type =
        amount - now < cost
          ? 'credits.exhausted'
          : mark > 0 && now - cost < mark && now >= mark
            ? 'credits.low'
            : undefined;
      if (type === undefined) return;
      tell({
        type,
        grant,
        ...(s.holder.kind === 'identity' ? { identity: s.holder.name } : {}),
        detail: {
          amount,
          remaining: amount - now,
          ...(s.credits.refill === undefined ? {} : { refill: s.credits.refill }),
          ...(s.period.endsAtMs === undefined
            ? {}
            : { refillsAt: new Date(s.period.endsAtMs).toISOString() }),
        },
      });
    });
  }

  /** A refused call's credits back; should Redis fail now, they stay spent (never one too many). */
  private async giveBack(spends: Spend[], cost: number): Promise<void> {
    if (spends.length === 0) return;
    const tx = this.redis.multi();
    for (const s of spends) tx.decrby(s.key, cost);
    await tx.exec().catch(() => undefined);
  }
}

/** What a call that costs more than one was short of. */
const short = (cost: number, left: number): string =>
  cost === 1 ? '' : ` (this call costs ${cost}; ${Math.max(0, left)} left)`;

function creditsExhausted(
  { credits, period, holder }: Spend,
  cost: number,
  left: number,
  nowMs: number,
): TollgateError {
  const whose = holder.kind === 'key' ? "this key's" : `the identity "${holder.name}"'s`;
  const headers: Record<string, string> =
    holder.kind === 'identity' ? { 'tollgate-identity': holder.name } : {};
  const refillAtMs = period.endsAtMs;
  if (refillAtMs === undefined) {
    // No refill will come: a retry helps only after a top-up, so clients are told to wait long.
    return new TollgateError(
      'credits_exhausted',
      `${whose} ${credits.amount} credits are spent${short(cost, left)}; an administrator can add more`,
      { headers: { 'retry-after': '3600', ...headers } },
    );
  }
  const per = credits.refill === 'daily' ? 'day' : 'month';
  return new TollgateError(
    'credits_exhausted',
    `${whose} ${credits.amount} credits for this ${per} are spent${short(cost, left)}; they refill at ${new Date(refillAtMs).toISOString()}`,
    {
      headers: {
        'retry-after': String(Math.max(1, Math.ceil((refillAtMs - nowMs) / 1000))),
        ...headers,
      },
    },
  );
}
