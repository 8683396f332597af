// The rate limiter's counters for a key of an identity, on a real Redis: the key's own budgets and
// the identity's are counted in one transaction, each on its own counters, and a refusal by any
// of them gives back every credit the call took.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { TollgateError } from '../../../common/errors.js';
import type { KeyGrant } from '../../../common/resources/grant.js';
import type { LimitNotice } from '../../../gateway/auth/limit-notices.js';
import { RateLimiter } from '../../../gateway/auth/rate-limit.js';
import { identityCounterAccount } from '../../../common/resources/identity.js';
import { testSealer } from '../signing.js';
import { readCredits } from '../../../common/apikey/credits.js';
import { redis } from '../../harness/index.js';

let client: Redis;
/** An identity's counter account, as the operator and the gateways make it. */
const account = async (name: string): Promise<string> => identityCounterAccount(await testSealer(), name);

beforeAll(async () => {
  client = new Redis((await redis('identity-counters')).url);
});

afterAll(() => client.disconnect());

const refusal = async (p: Promise<void> | undefined): Promise<TollgateError> => {
  const err = await Promise.resolve(p).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof TollgateError)) throw new Error(`admitted, or failed otherwise: ${String(err)}`);
  return err;
};

describe('a key of an identity', () => {
  it('spends its own credits and its identity’s; the scarcer refuses, and every credit comes back', async () => {
    const suffix = Math.random().toString(36).slice(2, 8);
    const identity = `team-${suffix}`;
    const limiter = new RateLimiter(client);
    // Credits that never refill (no EXPIRE in the transaction) beside daily ones and a window:
    // each counter's reply is read from its own place.
    const acct = await account(identity);
    const grant = (id: string): KeyGrant => ({
      id,
      owner: 'alice',
      module: 'platform',
      roles: ['viewer'],
      credits: { amount: 100 },
      limits: [{ name: 'burst', requests: 100, windowSeconds: 60 }],
      identity: { name: identity, account: acct, credits: { amount: 3, refill: 'daily' } },
    });
    const a = grant(`a${suffix}`);
    const b = grant(`b${suffix}`);
    await limiter.take(a);
    await limiter.take(b);
    await limiter.take(a);
    const spent = await refusal(limiter.take(b));
    expect([spent.status, spent.code, spent.headers?.['tollgate-identity']]).toEqual([
      429,
      'credits_exhausted',
      identity,
    ]);
    expect(spent.message).toMatch(
      new RegExp(`^the identity "${identity}"'s 3 credits for this day are spent`),
    );
    // b's own credits: one spent, the refused call's given back.
    expect((await readCredits(client, b.id, { amount: 100 })).spent).toBe(1);
    expect((await readCredits(client, acct, { amount: 3, refill: 'daily' })).remaining).toBe(0);
    // An identity's counters are never a key's, whatever its name (a key id's, here).
    const lookalike = `${'0'.repeat(20)}`;
    await limiter.take({
      ...a,
      id: lookalike,
      credits: { amount: 1 },
      identity: { name: lookalike, account: await account(lookalike), credits: { amount: 5 } },
    });
    const own = await refusal(
      limiter.take({
        ...a,
        id: lookalike,
        credits: { amount: 1 },
        identity: { name: lookalike, account: await account(lookalike), credits: { amount: 5 } },
      }),
    );
    expect(own.message).toMatch(/^this key's 1 credits are spent/);
  });

  it('is held to its identity’s named limit, which says whose it is', async () => {
    const identity = `ops-${Math.random().toString(36).slice(2, 8)}`;
    const limiter = new RateLimiter(client);
    const g: KeyGrant = {
      id: `c${Math.random().toString(36).slice(2, 8)}`,
      owner: 'alice',
      module: 'platform',
      roles: ['viewer'],
      identity: {
        name: identity,
        account: await account(identity),
        limits: [{ name: 'per-hour', requests: 2, windowSeconds: 3600 }],
      },
    };
    await limiter.take(g);
    await limiter.take({ ...g, id: `${g.id}x` });
    const over = await refusal(limiter.take(g));
    expect([over.code, over.headers?.['tollgate-limit'], over.headers?.['tollgate-identity']]).toEqual([
      'rate_limited',
      'per-hour',
      identity,
    ]);
    expect(over.message).toMatch(
      new RegExp(`^this key's identity "${identity}" limit "per-hour" allows 2 requests per 3600 s`),
    );
  });
});

describe('what the limiter tells the webhooks', () => {
  it('a window’s first refusal, and credits low and spent, once each among concurrent calls', async () => {
    const notices: LimitNotice[] = [];
    const limiter = new RateLimiter(client, {
      countsCredits: true,
      leases: true,
      notices: (n) => notices.push(n),
    });
    const suffix = Math.random().toString(36).slice(2, 8);
    const grant: KeyGrant = {
      id: `n${suffix}`,
      owner: 'alice',
      module: 'platform',
      roles: ['viewer'],
      limits: [{ name: 'burst', requests: 30, windowSeconds: 3600 }],
      identity: { name: `crew-${suffix}`, account: await account(`crew-${suffix}`), credits: { amount: 20 } },
    };
    // 40 calls at once: 20 admitted (the identity's credits), the rest refused.
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, () =>
        Promise.resolve(limiter.take(grant)).then(
          () => 'ok',
          (e: unknown) => (e as TollgateError).code,
        ),
      ),
    );
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(20);
    // Refused calls keep counting in the window: its 31st call is the first over it.
    expect(notices.map((n) => `${n.type}:${n.identity ?? 'key'}`).sort()).toEqual([
      `credits.exhausted:crew-${suffix}`,
      `credits.low:crew-${suffix}`,
      'key.rate_limited:key',
    ]);
    expect(notices.find((n) => n.type === 'credits.low')?.detail).toEqual({ amount: 20, remaining: 2 });
    expect(notices.find((n) => n.type === 'key.rate_limited')?.detail).toEqual({
      limit: 'burst',
      requests: 30,
      windowSeconds: 3600,
    });
  });
});
