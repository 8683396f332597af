import { describe, expect, it } from '@jest/globals';
import type { KeyGrant } from '../../../common/resources/grant.js';
import { BudgetPlans } from '../../../gateway/auth/budget-plan.js';

const grant: KeyGrant = {
  id: 'key-1',
  owner: 'alice',
  module: 'bda',
  roles: ['fraud'],
  rateLimit: { requests: 10, windowSeconds: 60 },
  limits: [{ name: 'burst', requests: 5, windowSeconds: 1 }],
  credits: { amount: 100, refill: 'daily' },
  identity: {
    name: 'acme',
    account: '@0123456789abcdef01234567',
    limits: [{ name: 'per-day', requests: 1_000, windowSeconds: 86_400 }],
  },
};

const at = Date.UTC(2026, 11, 3, 10, 0, 30, 250);

describe("a key's budgets, worked out once per grant", () => {
  it('count every window of the key and of its identity, then the credits, each under its own counter', () => {
    const { windows, spends, counted } = new BudgetPlans().counting(grant, 1, at);
    expect(windows.map((w) => [w.name ?? '', w.holder.kind, w.start])).toEqual([
      ['', 'key', Math.floor(at / 60_000) * 60],
      ['burst', 'key', Math.floor(at / 1000)],
      ['per-day', 'identity', Math.floor(at / 86_400_000) * 86_400],
    ]);
    expect(spends.map((s) => [s.holder.kind, s.period.id])).toEqual([['key', 'd2026-12-03']]);
    // The counters in the same order: the windows', then the credits' (the limiter reads them so).
    expect(counted.map((c) => c.key)).toEqual([...windows.map((w) => w.key), spends[0]?.key]);
    expect(counted.map((c) => [c.limit, c.need])).toEqual([
      [10, 1],
      [5, 1],
      [1_000, 1],
      [100, 1],
    ]);
  });

  it('keep a counter while its window runs, make the next one as it turns, and price each call', () => {
    const plans = new BudgetPlans();
    const first = plans.counting(grant, 1, at);
    const same = plans.counting(grant, 1, at + 300);
    // The same second: every counter as it was (nothing made again on the hot path).
    same.counted.forEach((c, i) => expect(c).toBe(first.counted[i]));
    const next = plans.counting(grant, 1, at + 1_000);
    // The burst's window turned, the minute's and the day's did not.
    expect(next.counted[0]).toBe(first.counted[0]);
    expect(next.counted[1]?.key).not.toBe(first.counted[1]?.key);
    expect(next.counted[1]?.endsAtMs).toBe((Math.floor(at / 1000) + 2) * 1000);
    // A call priced 4 needs 4 credits of the same counter.
    const priced = plans.counting(grant, 4, at + 1_000);
    expect([priced.counted[3]?.key, priced.counted[3]?.need]).toEqual([first.counted[3]?.key, 4]);
    // The next day: the credits' next period and the identity's next window.
    const tomorrow = plans.counting(grant, 1, at + 86_400_000);
    expect(tomorrow.spends[0]?.period.id).toBe('d2026-12-04');
    expect(tomorrow.counted[2]?.key).not.toBe(first.counted[2]?.key);
  });

  it('a rolled key counts on its chain’s counters, and a key with no budget counts nothing', () => {
    const plans = new BudgetPlans();
    const rolled = plans.counting({ ...grant, id: 'key-2', countsAs: 'key-1' }, 1, at);
    expect(rolled.counted[0]?.key).toBe(plans.counting(grant, 1, at).counted[0]?.key);
    const plain = plans.counting({ id: 'k', owner: 'a', module: 'bda', roles: ['fraud'] }, 1, at);
    expect(plain.counted).toEqual([]);
  });

  it('name the next window of each that ends within the bound, once per window, to be leased before it begins', () => {
    const plans = new BudgetPlans();
    const start = Math.floor(at / 1000) * 1000;
    plans.counting(grant, 1, start + 900);
    // 100 ms before the burst's second turns: only the burst's next window (the minute's and the
    // day's end later).
    const next = plans.upcoming(grant, start + 960, 50);
    expect(next?.map((c) => [c.key, c.endsAtMs])).toEqual([
      [plans.counting(grant, 1, start + 1_000).counted[1]?.key, start + 2_000],
    ]);
    // Asked for once per window.
    plans.counting(grant, 1, start + 970);
    expect(plans.upcoming(grant, start + 970, 50)).toBeUndefined();
    // Too early for any.
    expect(plans.upcoming(grant, start + 1_100, 50)).toBeUndefined();
  });
});
