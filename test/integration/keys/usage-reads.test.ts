// Usage records are written by sidecars too, with a Redis password any guarded team can read: a
// team may put values of megabytes in them. The readers (the management API's listings and usage
// pages, the operator's status pass) take only what a gateway writes, and fetch nothing larger.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import {
  readKeyUsage,
  readRecentHours,
  readUsageSeries,
  usageBuckets,
} from '../../../common/apikey/usage.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { redis } from '../../harness/index.js';

let client: Redis;
let watcher: Redis;

beforeAll(async () => {
  const { url } = await redis('usage-reads');
  client = new Redis(url);
  watcher = new Redis(url);
});

afterAll(() => {
  client.disconnect();
  watcher.disconnect();
});

/** Bytes Redis has sent to all its clients so far. */
async function sent(): Promise<number> {
  const info = await watcher.info('stats');
  return Number(/total_net_output_bytes:(\d+)/.exec(info)?.[1]);
}

const MB = 1024 * 1024;

describe('reading usage a team may have written', () => {
  it('a key’s figures of megabytes are neither fetched nor shown; the others are', async () => {
    const [honest, forged] = ['a1'.repeat(10), 'b2'.repeat(10)];
    await client.hincrby(redisKeys.keyUsage(honest), 'count', 5);
    await client.hset(redisKeys.keyUsage(honest), 'lastUsed', '2026-11-27T10:00:00.000Z');
    await client.hincrby(redisKeys.keyUsage(forged), 'count', 3);
    await client.hset(redisKeys.keyUsage(forged), 'lastUsed', 'x'.repeat(4 * MB), 'refused', 'y'.repeat(MB));
    const before = await sent();
    const usage = await readKeyUsage(client, [honest, forged]);
    expect((await sent()) - before).toBeLessThan(64 * 1024);
    expect(usage.get(honest)).toEqual({
      count: 5,
      refused: 0,
      rows: 0,
      lastUsed: '2026-11-27T10:00:00.000Z',
    });
    // A figure too long to be the gateway's is as if absent: the key shows its count alone.
    expect(usage.get(forged)).toEqual({ count: 3, refused: 0, rows: 0 });
  });

  it('a key’s records turned into other types (EXPIRE, then ZINCRBY or HINCRBY) read as empty, failing no other key', async () => {
    const [honest, turned] = ['d4'.repeat(10), 'e5'.repeat(10)];
    const now = Date.now();
    const { month, hourOfMonth } = usageBuckets(now);
    await client.hincrby(redisKeys.keyUsage(honest), 'count', 4);
    await client.hincrby(redisKeys.keyUsageHours(honest, month), `${hourOfMonth}r`, 4);
    // What a sidecar's user may do to its own key's records (its ACL: EXPIRE, ZINCRBY, HINCRBY).
    await client.zincrby(redisKeys.keyUsage(turned), 1, 'x');
    await client.zincrby(redisKeys.keyUsageHours(turned, month), 1, 'x');
    await client.hincrby(redisKeys.keyUsageEndpoints(turned), 'GET /x', 1);
    const usage = await readKeyUsage(client, [honest, turned]);
    expect(usage.get(honest)).toEqual({ count: 4, refused: 0, rows: 0 });
    expect(usage.has(turned)).toBe(false);
    const hours = await readRecentHours(client, [honest, turned], 24, now);
    expect(hours.get(honest)?.at(-1)).toBe(4);
    expect(hours.get(turned)?.every((n) => n === 0)).toBe(true);
    const series = await readUsageSeries(client, turned);
    expect(series.topEndpoints).toEqual([]);
    expect(series.perHour.every((p) => p.requests === 0)).toBe(true);
  });

  it('an endpoint name of megabytes among a key’s busiest is left out, and not fetched', async () => {
    const id = 'c3'.repeat(10);
    await client.zincrby(redisKeys.keyUsageEndpoints(id), 5, 'GET /events/bda/wf/svc');
    await client.zincrby(redisKeys.keyUsageEndpoints(id), 100, `GET /${'z'.repeat(2 * MB)}`);
    const before = await sent();
    const series = await readUsageSeries(client, id);
    expect((await sent()) - before).toBeLessThan(256 * 1024);
    expect(series.topEndpoints).toEqual([{ endpoint: 'GET /events/bda/wf/svc', requests: 5 }]);
  });
});
