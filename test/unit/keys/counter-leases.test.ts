import { describe, expect, it } from '@jest/globals';
import {
  CounterLeases,
  IDLE_MS,
  returnable,
  settle,
  type Counted,
  type Unused,
} from '../../../gateway/auth/counter-leases.js';

const T0 = 1_800_000_000_000;

const counter = (over: Partial<Counted> = {}): Counted => ({
  key: 'tg:cr:k:all',
  family: 'k/credits',
  limit: 1_000_000,
  need: 1,
  endsAtMs: undefined,
  outlivesMs: 0,
  ...over,
});

/** `n` calls of one budget through the leases, each settled on a counter kept here. */
function drive(
  leases: CounterLeases,
  c: Counted,
  n: number,
  startMs: number,
  count: { value: number },
): number {
  let trips = 0;
  for (let i = 0; i < n; i++) {
    const now = startMs + i / 2;
    if (leases.takeLocal([c], now)) continue;
    trips++;
    const extra = leases.extra(c, now);
    count.value += c.need + extra;
    const unused: Unused[] = [];
    leases.keep(c, settle(c, extra, count.value, unused), now, unused);
    for (const u of unused) count.value -= u.units;
  }
  return trips;
}

describe('counter leases', () => {
  it('remember nothing of a budget served below the threshold', () => {
    const leases = new CounterLeases();
    const count = { value: 0 };
    for (let k = 0; k < 500; k++) {
      const c = counter({ key: `tg:cr:k${k}:all`, family: `k${k}/credits` });
      drive(leases, c, 3, T0 + k * 1000, count);
    }
    expect(leases.size.leases).toBe(0);
    expect(count.value).toBe(1500);
  });

  it('lease a hot budget, a round trip per lease', () => {
    const leases = new CounterLeases();
    const count = { value: 0 };
    const trips = drive(leases, counter(), 4000, T0, count);
    // The first 100 ms (200 calls) are counted one by one, to learn the pace; then ~100 a lease.
    expect(trips).toBeLessThan(260);
    const held = count.value - 4000;
    expect(held).toBeGreaterThan(0);
    // At most 50 ms of the pace (2,000 a second): 100 units.
    expect(held).toBeLessThanOrEqual(100);
  });

  it('never keep the last sixteenth of a budget, whatever the extra asked for', () => {
    const unused: Unused[] = [];
    // 990 spent of 1,000 before this call, which asked for 50 more on an older count.
    const reply = settle(counter({ limit: 1000 }), 50, 1041, unused);
    expect(reply).toEqual({ fits: true, before: 990, after: 991, kept: 0 });
    expect(unused).toEqual([{ key: 'tg:cr:k:all', endsAtMs: undefined, outlivesMs: 0, units: 50 }]);
    const over: Unused[] = [];
    expect(settle(counter({ limit: 1000, need: 5 }), 10, 1012, over)).toMatchObject({
      fits: false,
      before: 997,
    });
    expect(over.map((u) => u.units)).toEqual([10]);
  });

  it('give idle units back, and a changed limit voids a lease at once', () => {
    const leases = new CounterLeases();
    const count = { value: 0 };
    drive(leases, counter(), 1000, T0, count);
    const held = count.value - 1000;
    expect(held).toBeGreaterThan(0);
    // An administrator lowers the limit: the next call is not admitted from the old units.
    const lowered = counter({ limit: 1200 });
    expect(leases.takeLocal([lowered], T0 + 600)).toBe(false);
    const unused: Unused[] = [];
    leases.keep(lowered, settle(lowered, 0, count.value + 1, unused), T0 + 600, unused);
    expect(unused.map((u) => u.units)).toEqual([held]);
    expect(leases.sweep(T0 + 600 + IDLE_MS)).toEqual([]);
    // Budgets not called for ten seconds are forgotten.
    leases.sweep(T0 + 20 * IDLE_MS);
    expect(leases.size).toEqual({ leases: 0, paces: 0 });
  });

  it('give back a period’s units after it ends while its counter lives, never a spent window’s', () => {
    const day = counter({ endsAtMs: T0 + 10_000, outlivesMs: 86_400_000 });
    expect(returnable({ ...day, units: 5 }, T0 + 20_000)).toBe(true);
    expect(returnable({ ...day, units: 5 }, T0 + 10_000 + 86_400_000)).toBe(false);
    const window = counter({ endsAtMs: T0 + 10_000, outlivesMs: 1000 });
    expect(returnable({ ...window, units: 5 }, T0 + 9_000)).toBe(true);
    expect(returnable({ ...window, units: 5 }, T0 + 10_000)).toBe(false);
    const leases = new CounterLeases();
    const count = { value: 0 };
    drive(leases, { ...day, endsAtMs: T0 + 100_000 }, 1000, T0, count);
    const back = leases.sweep(T0 + 100_000);
    expect(back.map((u) => u.units)).toEqual([count.value - 1000]);
  });

  it('refill a hot lease running low ahead of need, so calls stop waiting for Redis, never past the limit', () => {
    const leases = new CounterLeases();
    const limit = 3_000;
    const c = counter({ limit });
    const count = { value: 0 };
    // Refills land 10 calls (5 ms) after they are asked for, as a round trip under load would.
    const landing: Array<{ at: number; c: Counted; extra: number }> = [];
    let admitted = 0;
    let waitedLate = 0;
    for (let i = 0; i < 6_000; i++) {
      const now = T0 + i / 2;
      for (const r of landing.filter((l) => l.at <= i)) {
        count.value += r.extra;
        const unused: Unused[] = [];
        leases.keep(r.c, settle(r.c, r.extra, count.value, unused), now, unused);
        for (const u of unused) count.value -= u.units;
        leases.refilled(r.c);
        landing.splice(landing.indexOf(r), 1);
      }
      if (leases.takeLocal([c], now)) {
        admitted++;
        for (const low of leases.runningLow([c], now) ?? [])
          landing.push({ at: i + 10, c: { ...low, need: 0 }, extra: leases.extra(low, now) });
        continue;
      }
      // Waits that count: after the pace is learnt, before the last sixteenth (refused past it).
      if (i > 400 && admitted < limit - limit / 16) waitedLate++;
      const extra = leases.extra(c, now);
      count.value += c.need + extra;
      const unused: Unused[] = [];
      const reply = settle(c, extra, count.value, unused);
      if (reply.fits) admitted++;
      leases.keep(c, reply, now, unused);
      for (const u of unused) count.value -= u.units;
    }
    // Past the first 200 ms (the pace learnt, the first lease taken) hardly a call waits, until
    // the last sixteenth of the budget, which is counted call by call.
    expect(waitedLate).toBeLessThan(5);
    // Never one admitted past the limit, nor one more unit counted than admitted and held.
    expect(admitted).toBe(limit);
    expect(count.value).toBeGreaterThanOrEqual(limit);
  });

  it('lease a window before it begins only for a hot budget, within a sixteenth of its limit', () => {
    const leases = new CounterLeases();
    const next = counter({
      key: 'tg:rl:k:next',
      family: 'k//1',
      limit: 320,
      endsAtMs: T0 + 2_000,
      outlivesMs: 1000,
    });
    expect(leases.ahead(next)).toBe(0);
    // 2,000 calls a second of the family: hot.
    const count = { value: 0 };
    drive(leases, counter({ key: 'tg:rl:k:now', family: 'k//1', endsAtMs: T0 + 1_000 }), 400, T0, count);
    expect(leases.ahead(next)).toBe(20);
    // Once leased, not again.
    const unused: Unused[] = [];
    leases.keep({ ...next, need: 0 }, settle({ ...next, need: 0 }, 20, 20, unused), T0 + 960, unused);
    expect(leases.ahead(next)).toBe(0);
    // Its first calls are admitted from it.
    expect(leases.takeLocal([next], T0 + 1_001)).toBe(true);
  });
});
