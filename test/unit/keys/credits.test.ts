import type { Redis } from 'ioredis';
import { creditPeriod } from '../../../common/apikey/credits.js';
import { TollgateError } from '../../../common/errors.js';
import { RateLimiter } from '../../../gateway/auth/rate-limit.js';

describe('credit periods', () => {
  it('are one for a key without refill, a UTC day or month with it, each ending at the next', () => {
    const at = Date.UTC(2026, 10, 30, 23, 59, 59); // 2026-11-30T23:59:59Z
    expect(creditPeriod(undefined, at)).toEqual({ id: 'all', endsAtMs: undefined });
    expect(creditPeriod('daily', at)).toEqual({ id: 'd2026-11-30', endsAtMs: Date.UTC(2026, 11, 1) });
    expect(creditPeriod('monthly', at)).toEqual({ id: 'm2026-11', endsAtMs: Date.UTC(2026, 11, 1) });
    const newYear = Date.UTC(2026, 11, 31, 12);
    expect(creditPeriod('daily', newYear).endsAtMs).toBe(Date.UTC(2027, 0, 1));
    expect(creditPeriod('monthly', newYear)).toEqual({ id: 'm2026-12', endsAtMs: Date.UTC(2027, 0, 1) });
  });
});

describe('a sidecar’s rate limiter', () => {
  it('refuses a key with credits (only the central gateway counts them), asking nothing of Redis', async () => {
    const untouched = new Proxy(
      {},
      {
        get: () => {
          throw new Error('Redis was asked');
        },
      },
    ) as unknown as Redis;
    const limiter = new RateLimiter(untouched, { countsCredits: false, leases: false });
    const err = await Promise.resolve(
      limiter.take({ id: 'k', owner: 'a', module: 'platform', roles: ['viewer'], credits: { amount: 5 } }),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TollgateError);
    expect([(err as TollgateError).status, (err as TollgateError).code]).toEqual([
      403,
      'credits_counted_centrally',
    ]);
  });
});

describe('a sidecar’s rate limiter, for a key of an identity', () => {
  it('refuses a key whose identity carries credits, naming the identity, asking nothing of Redis', async () => {
    const untouched = new Proxy(
      {},
      {
        get: () => {
          throw new Error('Redis was asked');
        },
      },
    ) as unknown as Redis;
    const err = await Promise.resolve(
      new RateLimiter(untouched, { countsCredits: false, leases: false }).take({
        id: 'k',
        owner: 'a',
        module: 'platform',
        roles: ['viewer'],
        identity: {
          name: 'acme',
          account: '@0123456789abcdef01234567',
          credits: { amount: 5, refill: 'daily' },
        },
      }),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TollgateError);
    expect((err as TollgateError).code).toBe('credits_counted_centrally');
    expect((err as TollgateError).message).toMatch(/identity "acme" carries credits/);
  });
});
