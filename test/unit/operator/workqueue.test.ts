import { jest } from '@jest/globals';
import { WorkQueue } from '../../../operator/framework/workqueue.js';

describe('work queue', () => {
  test('a key added many times is processed once', async () => {
    const q = new WorkQueue();
    q.add('ns/a');
    q.add('ns/a');
    q.add('ns/b');
    q.add('ns/a');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('ns/a');
    expect(await q.get()).toBe('ns/b');
  });

  test('100,000 keys come out in the order they went in, with keys added while it drains behind them', async () => {
    const q = new WorkQueue();
    const n = 100_000;
    for (let i = 0; i < n; i++) q.add(`ns/k${i}`);
    const seen: string[] = [];
    for (let i = 0; i < n; i++) {
      const key = (await q.get())!;
      seen.push(key);
      q.done(key);
      if (i % 10 === 0) q.add(`ns/late${i}`);
    }
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => `ns/k${i}`));
    expect(q.length).toBe(n / 10);
    expect(await q.get()).toBe('ns/late0');
    expect(await q.get()).toBe('ns/late10');
  });

  test('a key added while in flight is processed again after, never twice at once', async () => {
    const q = new WorkQueue();
    q.add('ns/a');
    const key = await q.get();
    q.add('ns/a');
    expect(q.length).toBe(0);
    q.done(key!);
    expect(q.length).toBe(1);
    expect(await q.get()).toBe('ns/a');
  });

  test('a waiting worker gets a key as soon as it is added', async () => {
    const q = new WorkQueue();
    const next = q.get();
    q.add('ns/x');
    expect(await next).toBe('ns/x');
    expect(q.busy).toBe(1);
  });

  test('failures back off exponentially up to the cap; forget resets', () => {
    jest.useFakeTimers();
    try {
      const q = new WorkQueue({ baseDelayMs: 10, maxDelayMs: 100 });
      const delays = [];
      for (let i = 0; i < 6; i++) {
        delays.push(q.addRateLimited('ns/a'));
        jest.runAllTimers();
      }
      expect(delays).toEqual([10, 20, 40, 80, 100, 100]);
      // A failing key counts as failing (the rebuild's sweep waits on it) until it succeeds.
      expect(q.failing).toBe(1);
      q.forget('ns/a');
      expect(q.failing).toBe(0);
      expect(q.addRateLimited('ns/a')).toBe(10);
    } finally {
      jest.useRealTimers();
    }
  });

  test('a key is unsettled while queued, in flight, or failed; settled once it succeeded', async () => {
    jest.useFakeTimers();
    try {
      const q = new WorkQueue({ baseDelayMs: 10 });
      expect(q.unsettled('ns/a')).toBe(false);
      q.add('ns/a');
      expect(q.unsettled('ns/a')).toBe(true);
      const key = (await q.get()) as string;
      expect(q.unsettled(key)).toBe(true);
      q.addRateLimited(key);
      q.done(key);
      // Failed, waiting for its retry: its routes are still its reconcile's to judge.
      expect([q.busy, q.unsettled(key)]).toEqual([0, true]);
      jest.advanceTimersByTime(10);
      await q.get();
      q.forget(key);
      q.done(key);
      expect(q.unsettled(key)).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });

  test('shutDown releases waiting workers and drops later adds', async () => {
    const q = new WorkQueue();
    const waiting = q.get();
    q.shutDown();
    expect(await waiting).toBeUndefined();
    q.add('ns/a');
    expect(await q.get()).toBeUndefined();
  });
});
