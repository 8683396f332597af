// Leases on the budget counters, on a real Redis: a key served hot is counted a few units at a time,
// never past its limits or credits across replicas, and every unit a replica does not use goes
// back. The calls' clock is passed in, so a "hot" pace (2,000 calls a second) does not depend on
// how fast this machine runs.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { TollgateError } from '../../../common/errors.js';
import type { KeyGrant } from '../../../common/resources/grant.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { RateLimiter } from '../../../gateway/auth/rate-limit.js';
import { IDLE_MS } from '../../../gateway/auth/counter-leases.js';
import { redis, restartRedis, stopRedis } from '../../harness/index.js';
import { waitUntil } from '../../harness/wait.js';

let client: Redis;

beforeAll(async () => {
  // Its own Redis: the tests count the transactions it runs.
  client = new Redis((await redis('counter-leases')).url);
});

afterAll(() => client.disconnect());

const suffix = (): string => Math.random().toString(36).slice(2, 10);

async function calls(command: string): Promise<number> {
  const stats = await client.info('commandstats');
  return Number(stats.match(new RegExp(`cmdstat_${command}:calls=(\\d+)`))?.[1] ?? 0);
}

const spent = async (id: string): Promise<number> =>
  Number(await client.get(redisKeys.creditsSpent(id, 'all')));

/** A window's count, for a limit named `name` of `windowSeconds`, at `atMs`. */
const windowCount = async (
  id: string,
  name: string,
  windowSeconds: number,
  atMs: number,
  on: Redis = client,
): Promise<number> => {
  const nowS = Math.floor(atMs / 1000);
  const start = nowS - (nowS % windowSeconds);
  return Number(await on.get(redisKeys.namedLimit(id, name, windowSeconds, start)));
};

const hot = (id: string, amount: number, requests = 1_000_000): KeyGrant => ({
  id,
  owner: 'alice',
  module: 'platform',
  roles: ['viewer'],
  credits: { amount },
  limits: [{ name: 'per-hour', requests, windowSeconds: 3600 }],
});

/** Calls at 2,000 a second of the calls' clock, until `n` are made or one is refused. */
async function burst(
  limiter: RateLimiter,
  grant: KeyGrant,
  n: number,
  startMs: number,
): Promise<{ admitted: number; refusal?: TollgateError }> {
  for (let i = 0; i < n; i++) {
    try {
      await limiter.take(grant, 1, startMs + i / 2);
    } catch (err) {
      if (!(err instanceof TollgateError)) throw err;
      return { admitted: i, refusal: err };
    }
  }
  return { admitted: n };
}

/** `n` calls in waves of `width` at once, at 2,000 a second of the calls' clock; counts the outcomes. */
async function waves(
  limiter: RateLimiter,
  grant: KeyGrant,
  n: number,
  startMs: number,
  width = 25,
): Promise<{ admitted: number; refused: Set<string> }> {
  let admitted = 0;
  const refused = new Set<string>();
  for (let i = 0; i < n; i += width) {
    const outcomes = await Promise.all(
      Array.from({ length: Math.min(width, n - i) }, (_, j) =>
        Promise.resolve(limiter.take(grant, 1, startMs + (i + j) / 2)).then(
          () => 'ok',
          (e: unknown) => (e instanceof TollgateError ? e.code : String(e)),
        ),
      ),
    );
    for (const o of outcomes) {
      if (o === 'ok') admitted++;
      else refused.add(o);
    }
  }
  return { admitted, refused };
}

describe('counter leases', () => {
  it('count a hot key a few units at a time, and give back what was not used', async () => {
    const limiter = new RateLimiter(client);
    const id = `hot${suffix()}`;
    const startMs = Date.now();
    const execBefore = await calls('exec');
    const { admitted } = await burst(limiter, hot(id, 1_000_000), 4000, startMs);
    const transactions = (await calls('exec')) - execBefore;
    expect(admitted).toBe(4000);
    // One transaction per call until the pace is known, then one per lease.
    expect(transactions).toBeLessThan(400);
    // Leased units show as spent until they go back.
    expect(await spent(id)).toBeGreaterThanOrEqual(4000);
    await limiter.close();
    expect(await spent(id)).toBe(4000);
    expect(await windowCount(id, 'per-hour', 3600, startMs)).toBe(4000);
  });

  it('count a key served slowly call by call, as before', async () => {
    const limiter = new RateLimiter(client);
    const id = `cool${suffix()}`;
    const startMs = Date.now();
    for (let i = 0; i < 50; i++) await limiter.take(hot(id, 1_000_000), 1, startMs + i * 20);
    expect(await spent(id)).toBe(50);
    expect(await windowCount(id, 'per-hour', 3600, startMs)).toBe(50);
    await limiter.close();
    expect(await spent(id)).toBe(50);
  });

  it('admit no call past the credits across replicas racing, and lose none of them', async () => {
    const id = `race${suffix()}`;
    const amount = 3000;
    const connections = [0, 1, 2, 3].map(() => new Redis(client.options));
    const replicas = connections.map((c) => new RateLimiter(c));
    const startMs = Date.now();
    const outcomes = await Promise.all(replicas.map((r) => burst(r, hot(id, amount), amount, startMs)));
    const admitted = outcomes.reduce((sum, o) => sum + o.admitted, 0);
    expect(admitted).toBeLessThanOrEqual(amount);
    for (const o of outcomes) expect(o.refusal?.code).toBe('credits_exhausted');
    await Promise.all(replicas.map((r) => r.close()));
    for (const c of connections) c.disconnect();
    // Every unit a replica held and did not use is back: the counter is the calls admitted.
    expect(await spent(id)).toBe(admitted);
    // And what is left can still be spent, to the last credit, and not one more.
    const last = new RateLimiter(client);
    const rest = await burst(last, hot(id, amount), amount, startMs + 5000);
    await last.close();
    expect(admitted + rest.admitted).toBe(amount);
    expect(rest.refusal?.code).toBe('credits_exhausted');
    expect(await spent(id)).toBe(amount);
  });

  it('admit no call past a window or the credits with calls overlapping in each of several replicas', async () => {
    const connections = [0, 1].map(() => new Redis(client.options));
    const replicas = connections.map((c) => new RateLimiter(c));
    const startMs = Date.now();
    // Credits the tighter budget: 2,500 of them, 4,000 calls.
    const credits = `overlap${suffix()}`;
    const spentOut = await Promise.all(replicas.map((r) => waves(r, hot(credits, 2500), 2000, startMs)));
    const creditsAdmitted = spentOut.reduce((sum, o) => sum + o.admitted, 0);
    expect(creditsAdmitted).toBeLessThanOrEqual(2500);
    expect(creditsAdmitted).toBeGreaterThan(2000);
    expect(new Set(spentOut.flatMap((o) => [...o.refused]))).toEqual(new Set(['credits_exhausted']));
    // A window the tighter one: 1,500 calls an hour, 3,000 calls.
    const window = `window${suffix()}`;
    const windowOut = await Promise.all(
      replicas.map((r) => waves(r, hot(window, 1_000_000, 1500), 1500, startMs)),
    );
    const windowAdmitted = windowOut.reduce((sum, o) => sum + o.admitted, 0);
    expect(windowAdmitted).toBeLessThanOrEqual(1500);
    expect(windowAdmitted).toBeGreaterThan(1200);
    expect(new Set(windowOut.flatMap((o) => [...o.refused]))).toEqual(new Set(['rate_limited']));
    await Promise.all(replicas.map((r) => r.close()));
    for (const c of connections) c.disconnect();
    expect(await spent(credits)).toBe(creditsAdmitted);
    expect(await spent(window)).toBe(windowAdmitted);
  });

  it('tell a window’s first refusal once per replica, however the units moved', async () => {
    const notices: string[] = [];
    const connections = [0, 1].map(() => new Redis(client.options));
    const replicas = connections.map(
      (c, i) =>
        new RateLimiter(c, {
          countsCredits: true,
          leases: true,
          notices: (n) => notices.push(`${i}:${n.type}:${String(n.detail['limit'])}`),
        }),
    );
    const id = `told${suffix()}`;
    await Promise.all(replicas.map((r) => waves(r, hot(id, 1_000_000, 1000), 1000, Date.now())));
    await Promise.all(replicas.map((r) => r.close()));
    for (const c of connections) c.disconnect();
    // Each replica was refused, and each told it once; the webhook inbox keeps one of them.
    expect(notices.sort()).toEqual(['0:key.rate_limited:per-hour', '1:key.rate_limited:per-hour']);
  });

  it('hold no call to a lease taken under a limit an administrator has since lowered', async () => {
    const limiter = new RateLimiter(client);
    const id = `lowered${suffix()}`;
    const startMs = Date.now();
    await burst(limiter, hot(id, 1_000_000), 1000, startMs);
    // The lease holds units of a million-a-hour window; the limit is now 1,000 an hour.
    const lowered = await burst(limiter, hot(id, 1_000_000, 1000), 10, startMs + 600);
    expect(lowered.admitted).toBe(0);
    expect([lowered.refusal?.code, lowered.refusal?.headers?.['tollgate-limit']]).toEqual([
      'rate_limited',
      'per-hour',
    ]);
    await limiter.close();
  });

  it('go back on their own once idle', async () => {
    const limiter = new RateLimiter(client);
    const id = `idle${suffix()}`;
    const startMs = Date.now();
    await burst(limiter, hot(id, 1_000_000), 600, startMs);
    expect(await spent(id)).toBeGreaterThan(600);
    const deadline = Date.now() + 3 * IDLE_MS + 300 + 2000;
    while ((await spent(id)) !== 600 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await spent(id)).toBe(600);
    await limiter.close();
  });

  it('admit nothing while Redis is down', async () => {
    const tag = 'counter-leases-down';
    const { url } = await redis(tag);
    const own = new Redis(url, {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => 50,
    });
    own.on('error', () => undefined);
    try {
      await new Promise((resolve) => own.once('ready', resolve));
      const limiter = new RateLimiter(own);
      const id = `down${suffix()}`;
      const startMs = Date.now();
      expect((await burst(limiter, hot(id, 1_000_000), 1000, startMs)).admitted).toBe(1000);
      await stopRedis(tag);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const down = await burst(limiter, hot(id, 1_000_000), 10, startMs + 500);
      expect([down.admitted, down.refusal?.status, down.refusal?.code]).toEqual([
        0,
        503,
        'redis_unavailable',
      ]);
      await limiter.close();
    } finally {
      await restartRedis(tag);
      own.disconnect();
    }
  });

  it('are dropped, never given back, when Redis comes back empty (a failover that lost them), and the counters are raised to what was admitted', async () => {
    const tag = 'counter-leases-failover';
    const { url } = await redis(tag);
    const own = new Redis(url, {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => 50,
    });
    own.on('error', () => undefined);
    try {
      await new Promise((resolve) => own.once('ready', resolve));
      const limiter = new RateLimiter(own);
      const id = `failover${suffix()}`;
      const startMs = Date.now();
      const grant = hot(id, 1_000_000, 2_000);
      expect((await burst(limiter, grant, 1000, startMs)).admitted).toBe(1000);
      // The new primary has none of the increments (a restart of a Redis that keeps nothing).
      await restartRedis(tag);
      const fresh = new Redis(url);
      try {
        await waitUntil(
          'the counter is raised back to what was admitted',
          async () => (await windowCount(id, 'per-hour', 3600, startMs, fresh)) >= 1000,
          { timeoutMs: 10_000 },
        );
        // Never given back below it, and the limit holds across the failover: 1,000 more at most.
        const after = await burst(limiter, grant, 2000, startMs + 600);
        expect(after.admitted).toBeLessThanOrEqual(1000);
        expect(after.refusal?.code).toBe('rate_limited');
        await limiter.close();
        expect(await windowCount(id, 'per-hour', 3600, startMs, fresh)).toBeGreaterThanOrEqual(1000);
      } finally {
        fresh.disconnect();
      }
    } finally {
      own.disconnect();
    }
  });

  it('are never taken where the Redis user may only INCR (a sidecar)', async () => {
    const limiter = new RateLimiter(client, { countsCredits: false, leases: false });
    const id = `sidecar${suffix()}`;
    const grant: KeyGrant = {
      id,
      owner: 'alice',
      module: 'bda',
      roles: ['wf'],
      limits: [{ name: 'per-hour', requests: 1_000_000, windowSeconds: 3600 }],
    };
    const before = [await calls('incrby'), await calls('decrby'), await calls('incr')];
    const { admitted } = await burst(limiter, grant, 500, Date.now());
    const after = [await calls('incrby'), await calls('decrby'), await calls('incr')];
    expect(admitted).toBe(500);
    expect([after[0]! - before[0]!, after[1]! - before[1]!, after[2]! - before[2]!]).toEqual([0, 0, 500]);
  });
});
