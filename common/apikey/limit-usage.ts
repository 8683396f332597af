import type { Redis } from 'ioredis';
import { redisKeys } from '../redis/schema.js';
import type { NamedLimit, RateLimit } from '../resources/grant.js';

/** A limit's window now: how much of it is used and when the next begins. */
export interface LimitUsage {
  /** The named limit's name; absent for a key's own `rateLimit`. */
  name?: string;
  requests: number;
  windowSeconds: number;
  used: number;
  resetsAt: string;
}

/**
 * What the current window of each limit of one account (a key's chain, or an identity) has used,
 * as the gateway counts it (fixed windows aligned on the epoch: budget-plan.ts). Replicas lease
 * a few calls ahead (counter-leases), so a busy key may read a little above what it has spent.
 */
export async function readLimitUsage(
  redis: Redis,
  account: string,
  budget: { rateLimit?: RateLimit | undefined; limits?: readonly NamedLimit[] | undefined },
  nowMs = Date.now(),
): Promise<LimitUsage[]> {
  const nowS = Math.floor(nowMs / 1000);
  const limits: Array<RateLimit & { name?: string }> = [
    ...(budget.rateLimit === undefined ? [] : [budget.rateLimit]),
    ...(budget.limits ?? []),
  ];
  if (limits.length === 0) return [];
  const starts = limits.map((l) => nowS - (nowS % l.windowSeconds));
  const values = await redis.mget(
    ...limits.map((l, i) =>
      l.name === undefined
        ? redisKeys.rateLimit(account, starts[i] as number)
        : redisKeys.namedLimit(account, l.name, l.windowSeconds, starts[i] as number),
    ),
  );
  return limits.map((l, i) => ({
    ...(l.name === undefined ? {} : { name: l.name }),
    requests: l.requests,
    windowSeconds: l.windowSeconds,
    used: Math.min(Number(values[i] ?? 0) || 0, l.requests),
    resetsAt: new Date(((starts[i] as number) + l.windowSeconds) * 1000).toISOString(),
  }));
}
