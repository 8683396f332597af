import { creditPeriod, CREDITS_COUNTER_OUTLIVES_S } from '../../common/apikey/credits.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { KeyGrant, RateLimit } from '../../common/resources/grant.js';
import type { Counted } from './counter-leases.js';
import type { Credits, Holder, Spend, Window } from './limit-notices.js';

/** A key's (or its identity's) limit: its counter is made once per window. */
interface WindowBudget {
  kind: 'window';
  account: string;
  limit: RateLimit;
  name: string | undefined;
  holder: Holder;
  family: string;
  current?: { window: Window; counted: Counted };
  /** The start of the next window whose counter was asked for ahead (upcoming). */
  ahead?: number;
}

/** Credits: their counter is made once per period (and per price). */
interface CreditBudget {
  kind: 'credits';
  account: string;
  credits: Credits;
  holder: Holder;
  family: string;
  current?: { spend: Spend; counted: Counted; fromMs: number };
}

type Budget = WindowBudget | CreditBudget;

/** What one call must fit: its windows, its credits, and their counters in that order. */
export interface Counting {
  windows: Window[];
  spends: Spend[];
  counted: Counted[];
}

/**
 * Every budget a key's calls count against, worked out once per grant (the key checker hands out
 * the same grant object while it is cached): per call only each window's start is computed, and a
 * counter's key and figures are made again only when its window or credits period turns. On a
 * busy key this is most of what the limiter did per call before its leases let it skip Redis.
 */
export class BudgetPlans {
  private readonly plans = new WeakMap<KeyGrant, Budget[]>();

  counting(grant: KeyGrant, cost: number, nowMs: number): Counting {
    const nowS = Math.floor(nowMs / 1000);
    const windows: Window[] = [];
    const spends: Spend[] = [];
    const windowCounters: Counted[] = [];
    const creditCounters: Counted[] = [];
    for (const b of this.planOf(grant)) {
      if (b.kind === 'window') {
        const start = nowS - (nowS % b.limit.windowSeconds);
        let current = b.current;
        if (current?.window.start !== start) current = b.current = windowOf(b, start);
        windows.push(current.window);
        windowCounters.push(current.counted);
      } else {
        let current = b.current;
        if (
          current === undefined ||
          nowMs < current.fromMs ||
          (current.spend.period.endsAtMs ?? Infinity) <= nowMs
        )
          current = b.current = spendOf(b, nowMs, cost);
        else if (current.counted.need !== cost) current.counted = { ...current.counted, need: cost };
        spends.push(current.spend);
        creditCounters.push(current.counted);
      }
    }
    return { windows, spends, counted: [...windowCounters, ...creditCounters] };
  }

  /**
   * The counters of the key's next windows, for those of its windows that end within `withinMs`
   * (each next window once): leased before they begin, the first calls of a new window need not
   * wait for Redis either.
   */
  upcoming(grant: KeyGrant, nowMs: number, withinMs: number): Counted[] | undefined {
    let next: Counted[] | undefined;
    for (const b of this.plans.get(grant) ?? []) {
      if (b.kind !== 'window' || b.current === undefined) continue;
      const endsAtMs = b.current.counted.endsAtMs ?? 0;
      if (endsAtMs <= nowMs || endsAtMs - nowMs > withinMs) continue;
      const start = b.current.window.start + b.limit.windowSeconds;
      if (b.ahead === start) continue;
      b.ahead = start;
      (next ??= []).push(windowOf(b, start).counted);
    }
    return next;
  }

  private planOf(grant: KeyGrant): Budget[] {
    let plan = this.plans.get(grant);
    if (plan !== undefined) return plan;
    plan = [];
    // A rolled key counts on its chain's counters: rolling resets no quota.
    add(plan, grant.countsAs ?? grant.id, { kind: 'key' }, grant);
    const { identity } = grant;
    if (identity !== undefined)
      add(plan, identity.account, { kind: 'identity', name: identity.name }, identity);
    this.plans.set(grant, plan);
    return plan;
  }
}

function add(
  plan: Budget[],
  account: string,
  holder: Holder,
  budget: Pick<KeyGrant, 'rateLimit' | 'limits' | 'credits'>,
): void {
  const limit = (l: RateLimit, name: string | undefined): void => {
    plan.push({
      kind: 'window',
      account,
      limit: l,
      name,
      holder,
      family: `${account}/${name ?? ''}/${l.windowSeconds}`,
    });
  };
  if (budget.rateLimit !== undefined) limit(budget.rateLimit, undefined);
  for (const l of budget.limits ?? []) limit(l, l.name);
  if (budget.credits !== undefined)
    plan.push({ kind: 'credits', account, credits: budget.credits, holder, family: `${account}/credits` });
}

function windowOf(b: WindowBudget, start: number): { window: Window; counted: Counted } {
  const key =
    b.name === undefined
      ? redisKeys.rateLimit(b.account, start)
      : redisKeys.namedLimit(b.account, b.name, b.limit.windowSeconds, start);
  return {
    window: { key, limit: b.limit, start, name: b.name, holder: b.holder, family: b.family },
    counted: {
      key,
      family: b.family,
      limit: b.limit.requests,
      need: 1,
      endsAtMs: (start + b.limit.windowSeconds) * 1000,
      outlivesMs: 1000,
    },
  };
}

function spendOf(b: CreditBudget, nowMs: number, cost: number): NonNullable<CreditBudget['current']> {
  const period = creditPeriod(b.credits.refill, nowMs);
  const key = redisKeys.creditsSpent(b.account, period.id);
  return {
    spend: { key, credits: b.credits, period, holder: b.holder, family: b.family },
    counted: {
      key,
      family: b.family,
      limit: b.credits.amount,
      need: cost,
      endsAtMs: period.endsAtMs,
      outlivesMs: CREDITS_COUNTER_OUTLIVES_S * 1000,
    },
    fromMs: nowMs,
  };
}
