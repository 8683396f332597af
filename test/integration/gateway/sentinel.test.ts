// Redis that survives failure: the gateway on a Sentinel-managed Redis (real redis-server
// processes: a primary, two replicas, three Sentinels), under a steady stream of calls while its
// members are killed. Nothing is lost, the outage is short and answered 503, never 401 or 404,
// and a key deleted after the failover is refused.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { KeyIndexWriter } from '../../../common/apikey/index-writer.js';
import { connectRedis } from '../../../common/redis/connect.js';
import { killInSentinelGroup, sentinelGroup, type SentinelInfo } from '../../harness/index.js';
import { waitUntil } from '../../harness/wait.js';
import {
  apikey,
  createKey,
  registerService,
  send,
  startGateway,
  startUpstream,
  uniqueName,
  type TestGateway,
  type Upstream,
} from './support.js';
import { testSealer } from '../signing.js';

const TAG = 'failover';

let group: SentinelInfo;
let writer: Redis;
let upstream: Upstream;
let gw: TestGateway;
const workflow = uniqueName('wf-sentinel');
let key: { key: string; hash: string; grant: { id: string } };
const path = `/events/bda/${workflow}/svc/ping`;

async function primaryPort(): Promise<number> {
  for (const port of group.sentinels) {
    const s = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await s.connect();
      const [, p] = (await s.call('SENTINEL', 'get-master-addr-by-name', group.name)) as [string, string];
      return Number(p);
    } catch {
      // this Sentinel is down: ask the next
    } finally {
      s.disconnect();
    }
  }
  throw new Error('no Sentinel answers');
}

// Loads a failed test left running: stopped in afterAll, or Jest would never exit.
const running = new Set<() => Promise<unknown>>();

/** Calls the gateway every 20 ms until stopped; each answer with the time it came. */
function steadyLoad(): { stop: () => Promise<Array<{ at: number; status: number; code?: string }>> } {
  const seen: Array<{ at: number; status: number; code?: string }> = [];
  let calling = true;
  const loop = (async () => {
    while (calling) {
      const res = await send(gw.url, path, { headers: apikey(key.key) }).catch(() => ({
        status: 0,
        json: { code: 'connection_failed' },
      }));
      seen.push({
        at: performance.now(),
        status: res.status,
        ...(res.json.code ? { code: res.json.code } : {}),
      });
      await sleep(20);
    }
  })();
  const stop = async (): Promise<Array<{ at: number; status: number; code?: string }>> => {
    calling = false;
    running.delete(stop);
    await loop;
    return seen;
  };
  running.add(stop);
  return { stop };
}

beforeAll(async () => {
  group = await sentinelGroup(TAG);
  writer = connectRedis(group.url, { maxRetriesPerRequest: 20 });
  upstream = await startUpstream();
  gw = await startGateway({ redisUrl: group.url, redisHeartbeatMs: 250 });
  await registerService(writer, workflow, 'svc', upstream.url);
  key = await createKey(writer, 'bda', [workflow]);
  // Replicated before anything is killed: what the primary acknowledged, a replica holds.
  await writer.call('WAIT', '2', '2000');
}, 90_000);

afterAll(async () => {
  await Promise.all([...running].map((stop) => stop()));
  await gw?.stop();
  await upstream?.close();
  writer?.disconnect();
});

describe('the gateway on a Sentinel-managed Redis', () => {
  it('finds the primary through the Sentinels and serves calls', async () => {
    expect(group.url).toMatch(
      /^redis\+sentinel:\/\/127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+\/tollgate$/,
    );
    expect((await send(gw.url, path, { headers: apikey(key.key) })).status).toBe(200);
  });

  it('a replica killed: nothing visible', async () => {
    const primary = await primaryPort();
    const replica = group.nodes.find((p) => p !== primary) as number;
    const load = steadyLoad();
    await sleep(300);
    await killInSentinelGroup(TAG, replica);
    await sleep(1_500);
    const seen = await load.stop();
    expect(seen.length).toBeGreaterThan(20);
    expect(seen.filter((s) => s.status !== 200)).toEqual([]);
  }, 30_000);

  it('the primary killed under load: a short outage of 503s, then every key and route as before', async () => {
    const before = await primaryPort();
    const load = steadyLoad();
    await sleep(300);
    const killedAt = performance.now();
    await killInSentinelGroup(TAG, before);
    // Until a replica is promoted and the gateway reconnected and answering again. How long the
    // outage lasts is printed for docs/install.md, not asserted: it is Sentinel's and the load's.
    await waitUntil(
      'a replica promoted and the gateway answering through it',
      async () =>
        (await primaryPort().catch(() => before)) !== before &&
        (await send(gw.url, path, { headers: apikey(key.key) })).status === 200,
      { timeoutMs: 40_000, intervalMs: 50 },
    );
    const backAt = performance.now();
    await sleep(2_000);
    const seen = await load.stop();
    const failures = seen.filter((s) => s.status !== 200);
    const outageMs = failures.length === 0 ? 0 : (failures.at(-1)?.at ?? 0) - killedAt;
    process.stderr.write(
      `sentinel failover: ${failures.length} of ${seen.length} calls refused, the last ${(outageMs / 1000).toFixed(1)} s after the kill\n`,
    );
    expect(await primaryPort()).not.toBe(before);
    // Fail closed, and say "retry": never a 401 or 404 that would make a client drop its key.
    for (const f of failures) {
      expect([f.status, f.code]).toEqual([
        503,
        expect.stringMatching(/^(redis_unavailable|index_rebuilding)$/),
      ]);
    }
    // Once back, back for good: every call answered after that was answered as before.
    expect(seen.filter((s) => s.at > backAt).map((s) => s.status)).toEqual(
      seen.filter((s) => s.at > backAt).map(() => 200),
    );
    // Nothing lost: the key and the route written before the kill are on the new primary.
    expect((await send(gw.url, path, { headers: apikey(key.key) })).status).toBe(200);
  }, 60_000);

  it('a key deleted after the failover is refused', async () => {
    await new KeyIndexWriter(writer, await testSealer()).delete({ hash: key.hash, id: key.grant.id });
    let res = await send(gw.url, path, { headers: apikey(key.key) });
    for (let i = 0; i < 800 && res.status === 200; i++) {
      await sleep(25);
      res = await send(gw.url, path, { headers: apikey(key.key) });
    }
    expect([res.status, res.json.code]).toEqual([401, 'unknown_api_key']);
  });

  it('all Sentinels down, then the primary: fail closed with the usual error', async () => {
    const fresh = await createKey(writer, 'bda', [workflow]);
    expect((await send(gw.url, path, { headers: apikey(fresh.key) })).status).toBe(200);
    const primary = await primaryPort();
    for (const s of group.sentinels) await killInSentinelGroup(TAG, s);
    await killInSentinelGroup(TAG, primary);
    let res = await send(gw.url, path, { headers: apikey(fresh.key) });
    for (let i = 0; i < 60 && res.status === 200; i++) {
      await sleep(50);
      res = await send(gw.url, path, { headers: apikey(fresh.key) });
    }
    expect([res.status, res.json.code]).toEqual([503, 'redis_unavailable']);
    expect(res.headers['retry-after']).toBe('1');
  }, 30_000);
});
