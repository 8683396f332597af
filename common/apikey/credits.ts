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
 * Forgets what the counters `id` spent in the periods current now: an identity made under a freed
 * name starts with nothing spent, whoever held the name before.
 */
export async function clearCredits(redis: Redis, id: string, nowMs = Date.now()): Promise<void> {
  const periods = [undefined, 'daily', 'monthly'] as const;
  await redis.del(...periods.map((refill) => redisKeys.creditsSpent(id, creditPeriod(refill, nowMs).id)));
}

/** A period's counter outlives its period by a day, so usage can still show the one just ended. */
export const CREDITS_COUNTER_OUTLIVES_S = 86_400;

/** How long a period's counter lives: its period and a day more; credits without refill never expire. */
export function counterTtlSeconds(period: CreditPeriod, nowMs: number): number | undefined {
  return period.endsAtMs === undefined
    ? undefined
    : Math.ceil((period.endsAtMs - nowMs) / 1000) + CREDITS_COUNTER_OUTLIVES_S;
}
