import type { Redis } from 'ioredis';
import { outsideCall } from '../../common/tracing/call-trace.js';
import { execAll } from '../../common/redis/transaction.js';
import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { BudgetPlans, type Counting } from './budget-plan.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';
import { LimitNotices, type LimitNotice, type Spend, type Window } from './limit-notices.js';
import {
  CounterLeases,
  IDLE_MS,
  returnable,
  settle,
  type Counted,
  type Settled,
  type Unused,
} from './counter-leases.js';

/** Whether a key has any limit or credits to count (a key without costs nothing here). */
export const isLimited = (grant: KeyGrant): boolean =>
  grant.rateLimit !== undefined ||
  grant.limits !== undefined ||
  grant.credits !== undefined ||
  grant.identity?.limits !== undefined ||
  grant.identity?.credits !== undefined;

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
  private readonly leases = new CounterLeases();
  private readonly plans = new BudgetPlans();
  /** Refills under way, waited for at close so their units go back before Redis does. */
  private readonly refills = new Set<Promise<void>>();
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly notices: LimitNotices;

  constructor(
    private readonly redis: Redis,
    private readonly opts: {
      countsCredits: boolean;
      /**
       * Take leases on hot budgets (gateway/auth/counter-leases.ts). Never in a sidecar: its Redis
       * user may only INCR a counter, as INCRBY (or DECRBY) could also take a count down.
       */
      leases: boolean;
      notices?: (n: LimitNotice) => void;
      /** The clock windows and periods follow: Redis's (redis-clock.ts), the same on every replica. */
      clock?: { now(): number };
    } = { countsCredits: true, leases: true },
  ) {
    this.notices = new LimitNotices(opts.notices);
    if (!opts.leases) return;
    let connected = redis.status === 'ready';
    redis.on('ready', () => {
      if (connected) void this.reconnected();
      connected = true;
    });
  }

  private now(): number {
    return this.opts.clock?.now() ?? Date.now();
  }

  /**
   * Called on every connection to Redis after the first: the primary may have changed (a
   * failover), and the increments leases were taken with may not have reached it. The leases are
   * dropped without a give-back, and each counter is raised back to at least what this replica
   * saw it at (a GET, then an INCRBY of the difference: never a DECRBY), so the calls the leases
   * admitted stay counted and none is admitted past a limit for their loss. A reconnect to the
   * same primary finds each counter where it was, and raises none.
   */
  async reconnected(): Promise<void> {
    const held = this.leases.forget();
    const now = this.now();
    for (const c of held) {
      if (!returnable({ ...c, units: 0 }, now)) continue;
      try {
        const value = Number((await this.redis.get(c.key)) ?? 0);
        if (value >= c.seen) continue;
        const tx = this.redis.multi().incrby(c.key, c.seen - value);
        if (c.endsAtMs !== undefined) tx.expire(c.key, expirySeconds(c, now), 'NX');
        await tx.exec();
      } catch {
        // Redis went again: the next reconnect tries what is left (nothing: the leases are gone),
        // and the counter stands where the new primary has it.
      }
    }
  }

  /**
   * Whether the call fits the key's budgets: undefined when it does and nothing needs to be waited
   * for (no budget, or this replica's leases cover it: the hot path takes no promise), else a
   * promise that resolves when it fits and rejects with 429 (and Retry-After) or 503.
   */
  take(grant: KeyGrant, cost = 1, nowMs = this.now(), what?: string): Promise<void> | undefined {
    let counting: Counting;
    try {
      // A price below 1 would admit calls for nothing, or make credits: never from a setting.
      if (!Number.isInteger(cost) || cost < 1)
        throw new RangeError(`a call costs a whole number >= 1, not ${cost}`);
      counting = this.plans.counting(grant, cost, nowMs);
      const spend = counting.spends[0];
      if (spend !== undefined && !this.opts.countsCredits) {
        const { holder } = spend;
        throw new TollgateError(
          'credits_counted_centrally',
          `${holder.kind === 'key' ? 'this key carries' : `this key's identity "${holder.name}" carries`} credits, which only the central gateway counts: call this service through it (/events/... or /v2/... on the gateway)`,
        );
      }
    } catch (err) {
      return Promise.reject(err);
    }
    const { windows, spends, counted } = counting;
    if (counted.length === 0) return undefined;
    const leasing = this.opts.leases && !this.closed;
    if (leasing) this.sweepSoon();
    // Like a cached grant (gateway/auth/key-check.ts), a lease counts only while Redis is up:
    // when it is down, nothing passes.
    if (leasing && this.redis.status === 'ready' && this.leases.takeLocal(counted, nowMs)) {
      this.leaseAhead(grant, counted, nowMs);
      return undefined;
    }
    return this.counted(grant, cost, nowMs, windows, spends, counted, leasing, what);
  }

  /** The call counted in Redis: one transaction of every counter it must fit. */
  private async counted(
    grant: KeyGrant,
    cost: number,
    nowMs: number,
    windows: Window[],
    spends: Spend[],
    counted: Counted[],
    leasing: boolean,
    what: string | undefined,
  ): Promise<void> {
    const nowS = Math.floor(nowMs / 1000);
    const extras = counted.map((c) => (leasing ? this.leases.extra(c, nowMs) : 0));
    let values: number[];
    try {
      values = await this.raise(
        counted.map((c, i) => ({ c, by: c.need + (extras[i] as number) })),
        nowMs,
      );
    } catch (err) {
      throw redisUnavailable(err);
    }
    const unused: Unused[] = [];
    const settled = counted.map((c, i) => {
      const reply = settle(c, extras[i] as number, values[i] as number, unused);
      // A limiter closed while this call waited keeps nothing: no sweep would give it back.
      if (leasing && !this.closed) this.leases.keep(c, reply, nowMs, unused);
      else if (reply.kept > 0) unused.push({ ...c, units: reply.kept });
      return reply;
    });
    const ofWindows = settled.slice(0, windows.length);
    const ofSpends = settled.slice(windows.length);
    this.notices.breaches(grant, windows, ofWindows, leasing);
    const refused = (): Promise<void> => {
      // A refused call's credits back: a top-up or the next period is not eaten by refusals.
      for (const c of counted.slice(windows.length)) unused.push({ ...c, units: cost });
      return this.giveBack(unused, nowMs);
    };
    const broke = spends.findIndex((_, i) => !(ofSpends[i] as Settled).fits);
    if (broke >= 0) {
      await refused();
      const left = (spends[broke] as Spend).credits.amount - (ofSpends[broke] as Settled).before;
      throw creditsExhausted(spends[broke] as Spend, cost, left, nowMs, what);
    }
    // The full window that frees last decides when to retry.
    let over: { w: Window; retryAfter: number } | undefined;
    windows.forEach((w, i) => {
      if ((ofWindows[i] as Settled).fits) return;
      const retryAfter = Math.max(1, w.start + w.limit.windowSeconds - nowS);
      if (over === undefined || retryAfter > over.retryAfter) over = { w, retryAfter };
    });
    if (over === undefined) {
      this.notices.credits(grant, spends, ofSpends, cost);
      // Units past a limit, asked for by a lease (gateway/auth/counter-leases.ts): not this call's.
      if (unused.length > 0) void this.giveBack(unused, nowMs);
      return;
    }
    await refused();
    const { w, retryAfter } = over;
    const whose = w.holder.kind === 'key' ? 'this key' : `this key's identity "${w.holder.name}"`;
    const allows =
      w.name === undefined
        ? `${whose} allows ${w.limit.requests} requests per ${w.limit.windowSeconds} s`
        : `${whose}${w.holder.kind === 'key' ? "'s" : ''} limit "${w.name}" allows ${w.limit.requests} requests per ${w.limit.windowSeconds} s`;
    throw new TollgateError('rate_limited', `${allows}; retry after ${retryAfter} s`, {
      headers: {
        'retry-after': String(retryAfter),
        ...(w.name === undefined ? {} : { 'tollgate-limit': w.name }),
        ...(w.holder.kind === 'identity' ? { 'tollgate-identity': w.holder.name } : {}),
      },
    });
  }

  /**
   * Leases taken before a call must wait for them, off any call's path: those running low
   * (counter-leases.ts runningLow) and those of windows about to begin (budget-plan.ts upcoming).
   */
  private leaseAhead(grant: KeyGrant, counted: Counted[], nowMs: number): void {
    const low = this.leases.runningLow(counted, nowMs) ?? [];
    const next = this.plans.upcoming(grant, nowMs, AHEAD_MS) ?? [];
    if (low.length === 0 && next.length === 0) return;
    const asked = [
      ...low.map((c) => ({ c: { ...c, need: 0 }, extra: this.leases.extra(c, nowMs) })),
      ...next.map((c) => ({ c: { ...c, need: 0 }, extra: this.leases.ahead(c) })),
    ].filter((a) => a.extra > 0);
    const refill = this.refill(asked, nowMs).finally(() => {
      for (const c of low) this.leases.refilled(c);
      this.refills.delete(refill);
    });
    this.refills.add(refill);
  }

  /**
   * Units asked for ahead of need, in one transaction, each settled as a call's would be (none
   * kept past the last sixteenth of a budget; what is not kept goes back). Should Redis fail, the
   * next call that finds a lease empty counts itself, as before leases ran ahead.
   */
  private async refill(asked: Array<{ c: Counted; extra: number }>, nowMs: number): Promise<void> {
    if (asked.length === 0) return;
    try {
      const values = await this.raise(
        asked.map(({ c, extra }) => ({ c, by: extra })),
        nowMs,
      );
      const unused: Unused[] = [];
      asked.forEach(({ c, extra }, i) => {
        const reply = settle(c, extra, values[i] as number, unused);
        if (this.closed) {
          if (reply.kept > 0) unused.push({ ...c, units: reply.kept });
        } else this.leases.keep(c, reply, nowMs, unused);
      });
      if (unused.length > 0) await this.giveBack(unused, nowMs);
    } catch {
      // Redis away: the leases run out, and the calls then count themselves (and are refused).
    }
  }

  /**
   * Raises each counter by its units in one transaction, each given its expiry if it has none
   * (EXPIRE NX; credits that never refill get none), and resolves with each counter's new value.
   */
  private async raise(raised: Array<{ c: Counted; by: number }>, nowMs: number): Promise<number[]> {
    const tx = this.redis.multi();
    // Where each increment's reply is, among the EXPIREs.
    const at: number[] = [];
    let n = 0;
    for (const { c, by } of raised) {
      // One unit by INCR: a sidecar's Redis user may not INCRBY.
      if (by === 1) tx.incr(c.key);
      else tx.incrby(c.key, by);
      at.push(n++);
      if (c.endsAtMs !== undefined) {
        tx.expire(c.key, expirySeconds(c, nowMs), 'NX');
        n++;
      }
    }
    const replies = await execAll(tx);
    return at.map((i) => Number(replies[i]));
  }

  /**
   * Units back to their counters: a refused call's credits, and leases' units past a limit or
   * unused. Should Redis fail now, they stay spent (never one too many). A window that has ended
   * is left alone; EXPIRE NX keeps a counter that expired meanwhile from living on.
   */
  private async giveBack(unused: Unused[], nowMs: number): Promise<void> {
    const live = unused.filter((u) => returnable(u, nowMs));
    if (live.length === 0) return;
    const tx = this.redis.multi();
    for (const u of live) {
      tx.decrby(u.key, u.units);
      if (u.endsAtMs !== undefined) tx.expire(u.key, expirySeconds(u, nowMs), 'NX');
    }
    await tx.exec().catch(() => undefined);
  }

  /** Starts the sweep of idle leases and old paces; a limiter that never leases runs no timer. */
  private sweepSoon(): void {
    if (this.sweeper !== undefined) return;
    // Made by the first call that leases: its timer is no call's (call-trace.ts).
    this.sweeper = outsideCall(() =>
      setInterval(() => {
        const now = this.now();
        this.notices.sweep(now);
        void this.giveBack(this.leases.sweep(now), now);
      }, IDLE_MS / 2),
    );
    this.sweeper.unref();
  }

  /** Gives every leased unit back; the gateway calls it as it shuts down, before Redis closes. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.refills]);
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    this.sweeper = undefined;
    const now = this.now();
    await this.giveBack(this.leases.sweep(now, true), now);
  }
}

/** How long before a window begins its lease is taken, for a budget that runs hot. */
const AHEAD_MS = 50;

/** A counter lives to its window's or period's end, and then `outlivesMs` more. */
const expirySeconds = (c: Pick<Counted, 'endsAtMs' | 'outlivesMs'>, nowMs: number): number =>
  Math.ceil(((c.endsAtMs as number) + c.outlivesMs - nowMs) / 1000);

/** What a call that costs more than one (or is priced per row: `what` it is) was short of. */
const short = (cost: number, left: number, what: string | undefined): string =>
  cost === 1 && what === undefined
    ? ''
    : ` (${what ?? 'this call'} costs ${cost}; ${Math.max(0, left)} left)`;

function creditsExhausted(
  { credits, period, holder }: Spend,
  cost: number,
  left: number,
  nowMs: number,
  what: string | undefined,
): TollgateError {
  const whose = holder.kind === 'key' ? "this key's" : `the identity "${holder.name}"'s`;
  const headers: Record<string, string> =
    holder.kind === 'identity' ? { 'tollgate-identity': holder.name } : {};
  const refillAtMs = period.endsAtMs;
  if (refillAtMs === undefined) {
    // No refill will come: a retry helps only after a top-up, so clients are told to wait long.
    return new TollgateError(
      'credits_exhausted',
      `${whose} ${credits.amount} credits are spent${short(cost, left, what)}; an administrator can add more`,
      { headers: { 'retry-after': '3600', ...headers } },
    );
  }
  const per = credits.refill === 'daily' ? 'day' : 'month';
  return new TollgateError(
    'credits_exhausted',
    `${whose} ${credits.amount} credits for this ${per} are spent${short(cost, left, what)}; they refill at ${new Date(refillAtMs).toISOString()}`,
    {
      headers: {
        'retry-after': String(Math.max(1, Math.ceil((refillAtMs - nowMs) / 1000))),
        ...headers,
      },
    },
  );
}
