/**
 * Leases on the Redis budget counters (gateway/auth/rate-limit.ts). A replica that serves one key
 * at more than `MIN_CALLS_PER_SLOT` calls per 100 ms takes a few units of each of that key's
 * budgets in the same increment as the call's own, and admits the next calls from them without a
 * round trip. The units are taken from the shared counter before they are spent, so no call is
 * ever admitted past a limit or past the credits, whatever the number of replicas.
 *
 * What it costs is bounded: a lease holds at most `LEASE_MS` of this replica's own recent traffic
 * on that budget and at most a sixteenth of what the budget has left (so the last sixteen units
 * are always counted one call at a time), and units a replica stops using go back after
 * `IDLE_MS`, or when it shuts down. Until then, other replicas may be refused that much early,
 * and usage shows the units as spent. A key served below the threshold, as most are, is counted
 * call by call exactly as before.
 */

/** Calls of one budget per 100 ms slot below which no lease is taken (500 calls a second). */
export const MIN_CALLS_PER_SLOT = 50;
const SLOT_MS = 100;
/** A lease covers this much of the replica's own traffic on the budget. */
const LEASE_MS = 50;
/** At most this share of what a budget has left goes into one lease. */
const SHARE = 16;
/** Units unused this long go back to the counter. */
export const IDLE_MS = 1_000;

/** One counter a call must fit: its Redis key, its budget, and what this call needs of it. */
export interface Counted {
  /** The Redis counter (a window's key, or a credits period's). */
  key: string;
  /** The same budget across windows and periods, for the pace: account, limit name, window. */
  family: string;
  /** The most the counter may reach. */
  limit: number;
  /** Units this call takes (1 for a window, the price for credits). */
  need: number;
  /** When the counter's window or period ends (ms); undefined for credits that never refill. */
  endsAtMs: number | undefined;
  /** How long the counter lives on after that end (its EXPIRE), so units can still go back. */
  outlivesMs: number;
}

/** Units taken from a counter and not needed: to be given back with DECRBY. */
export type Unused = Pick<Counted, 'key' | 'endsAtMs' | 'outlivesMs'> & { units: number };

/** What a counter's reply says of one call. */
export interface Settled {
  /** The call fits this counter. */
  fits: boolean;
  /** The counter before this request. */
  before: number;
  /** The counter as it stands for this replica: before, plus the need, plus the units kept. */
  after: number;
  /** Units beyond the need this replica keeps for its next calls. */
  kept: number;
}

/**
 * Reads a counter's reply to INCRBY need+extra: whether the call fits, and how many of the extra
 * units it may keep, judged on the count Redis gave (the extra was asked for on an older one), so
 * a lease never holds the last sixteenth; the rest go to `unused`, to be given back.
 */
export function settle(c: Counted, extra: number, value: number, unused: Unused[]): Settled {
  const before = value - c.need - extra;
  const fits = before + c.need <= c.limit;
  const kept = fits ? Math.max(0, Math.min(extra, Math.floor((c.limit - before - c.need) / SHARE))) : 0;
  if (extra > kept) unused.push({ ...pick(c), units: extra - kept });
  return { fits, before, after: before + c.need + kept, kept };
}

/** Whether units may still go back to a counter: its window runs, or its period's counter lives. */
export const returnable = (u: Unused, nowMs: number): boolean =>
  u.endsAtMs === undefined || nowMs < u.endsAtMs + u.outlivesMs - 1000;

const pick = (c: Unused | Counted): Pick<Counted, 'key' | 'endsAtMs' | 'outlivesMs'> => ({
  key: c.key,
  endsAtMs: c.endsAtMs,
  outlivesMs: c.outlivesMs,
});

interface Lease extends Unused {
  /** The limit they were taken under: a changed limit (an administrator's) voids them. */
  limit: number;
  lastUsedMs: number;
  /** The counter's value as this replica last saw it. */
  seen: number;
  /** A refill ahead of need is under way (runningLow). */
  refilling?: boolean;
}

interface Pace {
  slot: number;
  calls: number;
  /** Calls in the last full slot. */
  previous: number;
}

export class CounterLeases {
  private readonly leases = new Map<string, Lease>();
  private readonly paces = new Map<string, Pace>();

  /**
   * Admits the call from the leases when every counter holds enough, and takes the units; else
   * takes nothing and the call goes to Redis. Either way the call counts in the budgets' pace.
   */
  takeLocal(counted: Counted[], nowMs: number): boolean {
    for (const c of counted) this.pace(c.family, nowMs);
    const held: Lease[] = [];
    for (const c of counted) {
      const lease = this.usable(c, nowMs);
      if (lease === undefined || lease.units < c.need) return false;
      held.push(lease);
    }
    held.forEach((lease, i) => {
      lease.units -= (counted[i] as Counted).need;
      lease.lastUsedMs = nowMs;
    });
    return true;
  }

  /**
   * The counters among `counted` whose lease runs low, under half of what a lease of them would
   * take now, with no refill under way: the limiter refills them off the call's path, so while a
   * budget runs hot no call waits for a round trip when its lease runs out. Each is marked until
   * `refilled` hears of it.
   */
  runningLow(counted: readonly Counted[], nowMs: number): Counted[] | undefined {
    let low: Counted[] | undefined;
    for (const c of counted) {
      const lease = this.usable(c, nowMs);
      if (lease === undefined || lease.refilling === true) continue;
      const next = this.extra(c, nowMs);
      if (next === 0 || lease.units * 2 >= next) continue;
      lease.refilling = true;
      (low ??= []).push(c);
    }
    return low;
  }

  /**
   * Units to lease of a window that has not begun, for a budget that runs hot: what its pace would
   * take, within a sixteenth of its limit (as any lease; settled on the count Redis gives).
   */
  ahead(c: Counted): number {
    if (this.leases.has(c.key) || !this.hot(c.family)) return 0;
    const pace = this.paces.get(c.family) as Pace;
    return Math.max(
      0,
      Math.min(Math.floor(c.limit / SHARE), Math.floor((pace.previous * LEASE_MS) / SLOT_MS)),
    );
  }

  /** A refill ahead of need is over (its units kept, or it failed): the lease may be refilled again. */
  refilled(c: Counted): void {
    const lease = this.leases.get(c.key);
    if (lease !== undefined) lease.refilling = false;
  }

  /** How many units to ask for beyond the call's need: none unless the budget runs hot. */
  extra(c: Counted, nowMs: number): number {
    const lease = this.usable(c, nowMs);
    // A counter not seen yet is counted exactly once, which tells how much is left.
    if (lease === undefined || !this.hot(c.family)) return 0;
    const pace = this.paces.get(c.family) as Pace;
    const room = c.limit - lease.seen - c.need;
    return Math.max(0, Math.min(Math.floor(room / SHARE), Math.floor((pace.previous * LEASE_MS) / SLOT_MS)));
  }

  /**
   * Keeps a reply's units beyond the call's need for the next calls, and what it said of the
   * count. A budget that does not run hot is not remembered: most keys leave nothing here.
   */
  keep(c: Counted, reply: Settled, nowMs: number, unused: Unused[]): void {
    const lease = this.usable(c, nowMs);
    if (lease !== undefined) {
      lease.units += reply.kept;
      lease.seen = Math.max(lease.seen, reply.after);
      lease.lastUsedMs = nowMs;
      return;
    }
    this.void(c.key, unused);
    if (reply.kept === 0 && !this.hot(c.family)) return;
    this.leases.set(c.key, {
      ...pick(c),
      units: reply.kept,
      limit: c.limit,
      lastUsedMs: nowMs,
      seen: reply.after,
    });
  }

  /**
   * Leases unused for `IDLE_MS`, or whose window or period has ended (or all, at shutdown), back
   * to their counters; paces of budgets no longer called forgotten.
   */
  sweep(nowMs: number, all = false): Unused[] {
    const unused: Unused[] = [];
    for (const [key, lease] of this.leases) {
      const ended = lease.endsAtMs !== undefined && lease.endsAtMs <= nowMs;
      if (all || ended || nowMs - lease.lastUsedMs >= IDLE_MS) this.void(key, unused);
    }
    for (const [family, pace] of this.paces) {
      if (nowMs - pace.slot * SLOT_MS > 10 * IDLE_MS) this.paces.delete(family);
    }
    return unused;
  }

  /**
   * Drops every lease without giving its units back, and says what count each counter stood at for
   * this replica. After a reconnect the primary may be another one (a Sentinel failover), which may
   * never have had the increments the leases were taken with: a DECRBY there would take the count
   * below what was admitted. The rate limiter raises each counter back to at least what it saw.
   */
  forget(): Array<Pick<Lease, 'key' | 'endsAtMs' | 'outlivesMs' | 'seen'>> {
    const held = [...this.leases.values()].map((l) => ({ ...pick(l), seen: l.seen - l.units }));
    this.leases.clear();
    return held;
  }

  /** The lease on a counter, if it is still good for this call's limit and time. */
  private usable(c: Counted, nowMs: number): Lease | undefined {
    const lease = this.leases.get(c.key);
    if (lease === undefined || lease.limit !== c.limit) return undefined;
    if (lease.endsAtMs !== undefined && lease.endsAtMs <= nowMs) return undefined;
    return lease;
  }

  private hot(family: string): boolean {
    return (this.paces.get(family)?.previous ?? 0) >= MIN_CALLS_PER_SLOT;
  }

  private void(key: string, unused: Unused[]): void {
    const lease = this.leases.get(key);
    if (lease === undefined) return;
    this.leases.delete(key);
    if (lease.units > 0) unused.push({ ...pick(lease), units: lease.units });
  }

  private pace(family: string, nowMs: number): void {
    const slot = Math.floor(nowMs / SLOT_MS);
    const pace = this.paces.get(family);
    if (pace === undefined) {
      this.paces.set(family, { slot, calls: 1, previous: 0 });
    } else if (pace.slot === slot) {
      pace.calls++;
    } else {
      pace.previous = pace.slot === slot - 1 ? pace.calls : 0;
      pace.slot = slot;
      pace.calls = 1;
    }
  }

  /** Budgets and leases held, for tests that they stay bounded. */
  get size(): { leases: number; paces: number } {
    return { leases: this.leases.size, paces: this.paces.size };
  }
}
