import type { CreditPeriod } from '../../common/apikey/credits.js';
import type { KeyGrant, RateLimit } from '../../common/resources/grant.js';
import type { Settled } from './counter-leases.js';

/** Whose budget a window or credits belong to, as the 429 names it. */
export type Holder = { kind: 'key' } | { kind: 'identity'; name: string };

/** One window being counted: where, and what the 429 says when it is full. */
export interface Window {
  key: string;
  limit: RateLimit;
  start: number;
  /** The named limit's name; undefined for the key's `rateLimit`. */
  name: string | undefined;
  holder: Holder;
  /** The same budget in every window, for its lease's pace. */
  family: string;
}

/** Credits being spent: whose, their counter, and the period it counts. */
export interface Spend {
  key: string;
  credits: Credits;
  period: CreditPeriod;
  holder: Holder;
  family: string;
}

export type Credits = NonNullable<KeyGrant['credits']>;

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
 * What a limiter tells of the limits it enforces (gateway/webhooks/events.ts makes them events):
 * a window's first refusal, credits running low, credits spent. Each once, as near as the
 * counters allow.
 */
export class LimitNotices {
  /**
   * Windows whose first refusal this replica has told (leasing only): with units in flight
   * between replicas the count can step over "exactly full", so each replica tells its first
   * refusal and the webhook inbox keeps one (gateway/webhooks/inbox.ts, noticeOnce).
   */
  private readonly told = new Map<string, number>();

  constructor(private readonly tell: ((n: LimitNotice) => void) | undefined) {}

  /** Forgets the windows that have ended. */
  sweep(now: number): void {
    for (const [key, endsAtMs] of this.told) if (endsAtMs <= now) this.told.delete(key);
  }

  breaches(grant: KeyGrant, windows: Window[], settled: Settled[], leasing: boolean): void {
    const tell = this.tell;
    if (tell === undefined) return;
    windows.forEach((w, i) => {
      const { fits, before } = settled[i] as Settled;
      if (fits) return;
      if (leasing) {
        if (this.told.has(w.key)) return;
        this.told.set(w.key, (w.start + w.limit.windowSeconds) * 1000);
      } else if (before !== w.limit.requests) {
        // Counted call by call, the window's first refused call is the one that found it full.
        return;
      }
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
  credits(grant: KeyGrant, spends: Spend[], settled: Settled[], cost: number): void {
    const tell = this.tell;
    if (tell === undefined) return;
    spends.forEach((s, i) => {
      const { amount } = s.credits;
      // Leased units count as spent: the counter crossed the mark in this reply, or it did not.
      const { before, after: now } = settled[i] as Settled;
      const mark = lowMark(amount);
      const type =
        amount - now < cost
          ? 'credits.exhausted'
          : mark > 0 && before < mark && now >= mark
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
}
