// The limits' windows follow Redis's clock, not each replica's: two replicas whose own clocks
// differ by a whole window still count one window. Real Redis.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { createLogger } from '../../../common/logger.js';
import type { KeyGrant } from '../../../common/resources/grant.js';
import { RateLimiter } from '../../../gateway/auth/rate-limit.js';
import { RedisClock } from '../../../gateway/auth/redis-clock.js';
import { redis } from '../../harness/index.js';

let client: Redis;
const log = createLogger('clock', 'silent');

beforeAll(async () => {
  client = new Redis((await redis('redis-clock')).url);
});
afterAll(() => client.disconnect());

const grant = (id: string): KeyGrant => ({
  id,
  owner: 'alice',
  module: 'bda',
  roles: ['wf'],
  limits: [{ name: 'per-minute', requests: 1, windowSeconds: 60 }],
});

/** A replica whose own clock is `skewMs` off, with or without Redis's clock. */
async function replica(
  skewMs: number,
  redisClock: boolean,
): Promise<{ limiter: RateLimiter; clock: RedisClock }> {
  const clock = new RedisClock(client, log, () => Date.now() + skewMs);
  if (redisClock) await clock.measure();
  const limiter = new RateLimiter(client, {
    countsCredits: true,
    leases: false,
    clock: redisClock ? clock : { now: () => Date.now() + skewMs },
  });
  return { limiter, clock };
}

const outcome = (p: Promise<void> | undefined): Promise<string> =>
  Promise.resolve(p).then(
    () => 'admitted',
    (err: { code?: string }) => err.code ?? 'error',
  );

describe("the limits' windows", () => {
  it('are one window on every replica by Redis’s clock, however far their own clocks are apart', async () => {
    const ahead = await replica(60_000, true);
    const behind = await replica(0, true);
    const [seconds] = await client.time();
    // Each reads Redis's time, within the round trip.
    for (const r of [ahead, behind])
      expect(Math.abs(r.clock.now() - Number(seconds) * 1000)).toBeLessThan(2_000);
    const g = grant(`clock${Math.random().toString(36).slice(2, 10)}`);
    expect(await outcome(behind.limiter.take(g))).toBe('admitted');
    // A minute ahead on its own clock, the other replica would start the next window and admit one
    // more; by Redis's clock it is the same window, and full.
    expect(await outcome(ahead.limiter.take(g))).toBe('rate_limited');
  });

  it('on each replica’s own clock, a replica a window ahead counts another window (what the Redis clock prevents)', async () => {
    const ahead = await replica(60_000, false);
    const behind = await replica(0, false);
    const g = grant(`local${Math.random().toString(36).slice(2, 10)}`);
    expect(await outcome(behind.limiter.take(g))).toBe('admitted');
    expect(await outcome(ahead.limiter.take(g))).toBe('admitted');
  });
});
