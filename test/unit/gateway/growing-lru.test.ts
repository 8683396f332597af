import { describe, expect, it } from '@jest/globals';
import { growingLru } from '../../../common/growing-lru.js';

describe('growingLru', () => {
  it('holds at most its count, dropping the least recently used first', () => {
    const lru = growingLru<string, { n: number }>(3);
    for (const k of ['a', 'b', 'c']) lru.set(k, { n: 1 });
    expect(lru.get('a')).toEqual({ n: 1 }); // a is now the most recent
    lru.set('d', { n: 4 });
    expect([...lru.keys()].sort()).toEqual(['a', 'c', 'd']);
    expect(lru.size).toBe(3);
    for (let i = 0; i < 1000; i++) lru.set(`k${i}`, { n: i });
    expect(lru.size).toBe(3);
    expect([...lru.keys()].sort()).toEqual(['k997', 'k998', 'k999']);
  });

  it('takes memory for what it holds, not for its capacity', () => {
    const before = process.memoryUsage().heapUsed;
    // With lru-cache's `max`, each of these would allocate ~44 MB of arrays before its first entry.
    const caches = Array.from({ length: 5 }, () => growingLru<string, true>(1_000_000, { ttl: 60_000 }));
    for (const c of caches) c.set('one', true);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(4 * 1024 * 1024);
  });

  it('lets entries expire after their time', () => {
    let now = 1_000;
    const lru = growingLru<string, true>(10, { ttl: 50, ttlResolution: 0, perf: { now: () => now } });
    lru.set('jti', true);
    now += 49;
    expect(lru.has('jti')).toBe(true);
    now += 2;
    expect(lru.has('jti')).toBe(false);
  });

  it('calls dispose for what it drops', () => {
    const dropped: string[] = [];
    const lru = growingLru<string, { id: string }>(1, { dispose: (v) => dropped.push(v.id) });
    lru.set('a', { id: 'a' });
    lru.set('b', { id: 'b' });
    expect(dropped).toEqual(['a']);
  });
});
