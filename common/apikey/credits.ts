import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { redisKeys } from '../redis/schema.js';
import { execAll } from '../redis/transaction.js';
import type { KeyGrant } from '../resources/grant.js';

/**
 * A key's credits are counted per period: `all` without refill, else the UTC day or month, so a
 * refill is a new counter rather than a write at midnight that every replica would race for.
 */
export interface CreditPeriod {
  id: string;
  /** When the next refill comes; undefined without refill. */
  endsAtMs: number | undefined;
}

export function creditPeriod(
  refill: NonNullable<KeyGrant['credits']>['refill'],
  nowMs = Date.now(),
): CreditPeriod {
  if (refill === undefined) return { id: 'all', endsAtMs: undefined };
  const now = new Date(nowMs);
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  if (refill === 'monthly')
    return { id: `m${y}-${String(m + 1).padStart(2, '0')}`, endsAtMs: Date.UTC(y, m + 1, 1) };
  const d = now.getUTCDate();
  return {
    id: `d${y}-${String(m + 1).padStart(2, '0')}-${String(d).padStart(2, '0')}`,
    endsAtMs: Date.UTC(y, m, d + 1),
  };
}

/** A key's credits as its owner and administrators see them. */
export interface CreditsState {
  amount: number;
  spent: number;
  remaining: number;
  refill?: 'daily' | 'monthly';
  /** When the next refill comes (ISO 8601); absent without refill. */
  refillsAt?: string;
}

/** The credits of the key whose counters are `id` (its countsAs, or its own id) now: its amount, and what Redis counted spent this period. */
export async function readCredits(
  redis: Redis,
  id: string,
  credits: NonNullable<KeyGrant['credits']>,
  nowMs = Date.now(),
): Promise<CreditsState> {
  const period = creditPeriod(credits.refill, nowMs);
  const spent = Number((await redis.get(redisKeys.creditsSpent(id, period.id))) ?? 0);
  return {
    amount: credits.amount,
    spent,
    remaining: Math.max(0, credits.amount - spent),
    ...(credits.refill === undefined ? {} : { refill: credits.refill }),
    ...(period.endsAtMs === undefined ? {} : { refillsAt: new Date(period.endsAtMs).toISOString() }),
  };
}

/** Adds credits to the current period of the counters `id` (a top-up): its spent count goes down by `add`. */
export async function addCredits(
  redis: Redis,
  id: string,
  credits: NonNullable<KeyGrant['credits']>,
  add: number,
  nowMs = Date.now(),
): Promise<void> {
  const period = creditPeriod(credits.refill, nowMs);
  const key = redisKeys.creditsSpent(id, period.id);
  const tx = redis.multi().decrby(key, add);
  const ttl = counterTtlSeconds(period, nowMs);
  if (ttl !== undefined) tx.expire(key, ttl, 'NX');
  await execAll(tx);
}

/**
 * Records `owner` as the holder of the identity counters `account` and, when another owner held
 * them before (an identity of the same name, deleted since), forgets what they spent in the
 * periods and windows current now (of `limits`, the named limits the new identity starts with).
 * The same owner making its identity again keeps them: deleting and making it resets no quota.
 */
export async function takeIdentityCounters(
  redis: Redis,
  account: string,
  owner: string,
  limits: ReadonlyArray<{ name: string; windowSeconds: number }> = [],
  nowMs = Date.now(),
): Promise<void> {
  const periods = [undefined, 'daily', 'monthly'] as const;
  const nowS = Math.floor(nowMs / 1000);
  const counters = [
    ...periods.map((refill) => redisKeys.creditsSpent(account, creditPeriod(refill, nowMs).id)),
    ...limits.map((l) =>
      redisKeys.namedLimit(account, l.name, l.windowSeconds, nowS - (nowS % l.windowSeconds)),
    ),
  ];
  const holder = createHash('sha256').update(owner).digest('hex');
  await redis.eval(
    TAKE_COUNTERS,
    1 + counters.length,
    redisKeys.countersHolder(account),
    ...counters,
    holder,
  );
}

const TAKE_COUNTERS = `
local before = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1])
if before and before ~= ARGV[1] and #KEYS > 1 then
  redis.call('DEL', unpack(KEYS, 2))
end
return 0`;

/** A period's counter outlives its period by a day, so usage can still show the one just ended. */
export const CREDITS_COUNTER_OUTLIVES_S = 86_400;

/** How long a period's counter lives: its period and a day more; credits without refill never expire. */
export function counterTtlSeconds(period: CreditPeriod, nowMs: number): number | undefined {
  return period.endsAtMs === undefined
    ? undefined
    : Math.ceil((period.endsAtMs - nowMs) / 1000) + CREDITS_COUNTER_OUTLIVES_S;
}
