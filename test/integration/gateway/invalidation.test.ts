import { once } from 'node:events';
import { pino } from 'pino';
import { Redis } from 'ioredis';
import { CacheInvalidation, InvalidatedCache } from '../../../gateway/invalidation.js';
import { redis } from '../../harness/index.js';
import { uniqueName } from './support.js';

/**
 * The subscriber connects while the gateway's services are still being built, and each cache
 * registers its channel as it is built. Caches may only be called live once every channel is
 * subscribed: one that connected halfway must not trust caches whose channel nobody hears.
 */
describe('cache invalidation subscribes to every channel, once started', () => {
  const clients: Redis[] = [];
  afterAll(() => {
    for (const c of clients) c.disconnect();
  });

  it('is not live before start, even connected, and hears channels registered after the connection', async () => {
    const { url } = await redis();
    const subscriber = new Redis(url);
    const publisher = new Redis(url);
    clients.push(subscriber, publisher);
    const warnings: string[] = [];
    const log = pino(
      { level: 'warn' },
      { write: (line: string) => warnings.push((JSON.parse(line) as { msg: string }).msg) },
    );
    const invalidation = new CacheInvalidation(subscriber, log, 60_000);
    const early = uniqueName('early');
    const late = uniqueName('late');
    const heard: string[] = [];
    invalidation.on(early, (m) => heard.push(`${early}:${m}`));
    await once(subscriber, 'ready');
    await new Promise((r) => setTimeout(r, 50));
    // Connected with one channel registered: not live, since more are on their way.
    expect(invalidation.live).toBe(false);
    invalidation.on(late, (m) => heard.push(`${late}:${m}`));
    invalidation.start();
    const deadline = Date.now() + 5_000;
    while (!invalidation.live && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(invalidation.live).toBe(true);
    await publisher.publish(early, 'a');
    await publisher.publish(late, 'b');
    while (heard.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(heard).toEqual([`${early}:a`, `${late}:b`]);
    expect(warnings).toEqual([]);
    invalidation.stop();
    expect(invalidation.live).toBe(false);
    // Stopped: a reconnection after it calls nothing live again.
    subscriber.disconnect(true);
    await once(subscriber, 'ready');
    await new Promise((r) => setTimeout(r, 100));
    expect(invalidation.live).toBe(false);
  });

  it('holds a weighed cache to its bytes as well as its count', async () => {
    const { url } = await redis();
    const subscriber = new Redis(url);
    clients.push(subscriber);
    const invalidation = new CacheInvalidation(subscriber, pino({ level: 'silent' }), 60_000);
    const cache = new InvalidatedCache<{ bytes: number }>(invalidation, {
      max: 100,
      weigh: { maxBytes: 10_000, maxEntryBytes: 5_000, bytesOf: (v) => v.bytes },
    });
    invalidation.on(uniqueName('weighed'), () => undefined);
    invalidation.start();
    const deadline = Date.now() + 5_000;
    while (!invalidation.live && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    // Three values of 4,000 bytes: the oldest goes to keep 10,000.
    for (const k of ['a', 'b', 'c']) expect(cache.set(k, { bytes: 4_000 }, cache.epoch)).toBe(true);
    expect(['a', 'b', 'c'].map((k) => cache.get(k) !== undefined)).toEqual([false, true, true]);
    // One past the largest a value may be is not kept, and pushes nothing out.
    cache.set('huge', { bytes: 6_000 }, cache.epoch);
    expect(['huge', 'b', 'c'].map((k) => cache.get(k) !== undefined)).toEqual([false, true, true]);
    // Small ones count as a hundredth of the bytes each: never more than 100 of them.
    for (let i = 0; i < 150; i++) cache.set(`small-${i}`, { bytes: 10 }, cache.epoch);
    const held = Array.from({ length: 150 }, (_, i) => cache.get(`small-${i}`)).filter(Boolean).length;
    expect(held).toBe(100);
    invalidation.stop();
  });
});
