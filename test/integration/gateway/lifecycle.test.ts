import { Agent, request } from 'undici';
import { generateKey } from '../../../common/apikey/format.js';
import { KeyIndexWriter } from '../../../common/apikey/index-writer.js';
import { redis, restartRedis, stopRedis } from '../../harness/index.js';
import { waitUntil } from '../../harness/wait.js';
import { spawnGateway, type GatewayProcess } from './process.js';
import {
  apikey,
  createKey,
  deleteKey,
  redisClient,
  registerService,
  send,
  startGateway,
  startUpstream,
  uniqueName,
  type Upstream,
} from './support.js';
import { testSealer } from '../signing.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function commandCount(r: ReturnType<typeof redisClient>, command: string): Promise<number> {
  const stats = await r.info('commandstats');
  return Number(stats.match(new RegExp(`cmdstat_${command}:calls=(\\d+)`))?.[1] ?? 0);
}

describe('gateway lifecycle', () => {
  let upstream: Upstream;

  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterAll(async () => {
    await upstream.close();
  });

  describe('a second gateway process', () => {
    let proc: GatewayProcess | undefined;
    let r: ReturnType<typeof redisClient>;
    const wf = uniqueName('wf');

    beforeAll(async () => {
      // Its own Redis, so command counts below are this test's alone.
      const info = await redis('gateway-revocation');
      r = redisClient(info.url);
      await registerService(r, wf, 'svc', upstream.url);
      proc = await spawnGateway({ TOLLGATE_REDIS_URL: info.url, LOG_LEVEL: 'warn' });
    });
    afterAll(async () => {
      if (proc !== undefined && proc.child.exitCode === null) {
        proc.child.kill('SIGKILL');
        await proc.exited;
      }
      r.disconnect();
    });

    // The cache has no expiry: a deleted key is refused only because the deletion's notice
    // reached this process. How soon it does is measured by `make bench ARGS=gateway`.
    it('serves from its cache, and stops a deleted key on the notice of its deletion', async () => {
      const gw = proc as GatewayProcess;
      const created = await createKey(r, 'bda', [wf]);
      const agent = new Agent({ connections: 1 });
      const call = async (): Promise<number> => {
        const res = await request(`${gw.url}/events/bda/${wf}/svc/x`, {
          headers: apikey(created.key),
          dispatcher: agent,
        });
        await res.body.dump();
        return res.statusCode;
      };
      expect(await call()).toBe(200);
      const gets = await commandCount(r, 'mget');
      for (let i = 0; i < 20; i++) expect(await call()).toBe(200);
      // The key and the route came from the in-process cache: no Redis GET at all.
      expect(await commandCount(r, 'mget')).toBe(gets);

      await deleteKey(r, { hash: created.hash, id: created.grant.id });
      await waitUntil('the deleted key is refused', async () => (await call()) === 401, {
        timeoutMs: 10_000,
        intervalMs: 10,
      });
      await agent.close();
    });

    it('a cache smaller than the keys in use: a key evicted and cached again still stops at once', async () => {
      const info = await redis('gateway-revocation');
      const gw = await startGateway({ redisUrl: info.url, cacheEntries: 2 });
      try {
        const [k1, k2, k3] = [
          await createKey(r, 'bda', [wf]),
          await createKey(r, 'bda', [wf]),
          await createKey(r, 'bda', [wf]),
        ];
        const call = async (key: string) =>
          (await send(gw.url, `/events/bda/${wf}/svc/x`, { headers: apikey(key) })).status;
        // k1 cached, pushed out by k2 and k3, cached again (k2 out): the change it is told of must
        // still find it, and so must k3's.
        for (const k of [k1, k2, k3, k1]) expect(await call(k.key)).toBe(200);
        for (const k of [k1, k3]) {
          await deleteKey(r, { hash: k.hash, id: k.grant.id });
          await waitUntil(`${k.grant.id} is refused`, async () => (await call(k.key)) === 401, {
            timeoutMs: 10_000,
            intervalMs: 10,
          });
        }
        expect(await call(k2.key)).toBe(200);
      } finally {
        await gw.stop();
      }
    });

    it('on SIGTERM finishes the in-flight request, then exits 0', async () => {
      const gw = proc as GatewayProcess;
      const { key } = await createKey(r, 'bda', [wf]);
      let arrived: () => void = () => undefined;
      const reachedUpstream = new Promise<void>((resolve) => (arrived = resolve));
      upstream.respond = (_req, res) => {
        arrived();
        setTimeout(() => res.end('slow answer'), 600);
      };
      const inFlight = send(gw.url, `/events/bda/${wf}/svc/slow`, { headers: apikey(key) });
      await reachedUpstream;
      gw.child.kill('SIGTERM');
      const answer = await inFlight;
      expect(answer.status).toBe(200);
      expect(answer.text).toBe('slow answer');
      expect(await gw.exited).toBe(0);
      await expect(fetch(`${gw.url}/healthz`)).rejects.toThrow();
    });
  });

  describe('Redis down', () => {
    it('refuses every call with 503 redis_unavailable, cached key or not, and recovers', async () => {
      const tag = 'gateway-redis-down';
      const info = await redis(tag);
      const r = redisClient(info.url);
      r.on('error', () => undefined);
      const wf = uniqueName('wf');
      await registerService(r, wf, 'svc', upstream.url);
      const created = await createKey(r, 'bda', [wf]);
      const gw = await startGateway({ redisUrl: info.url });
      try {
        const path = `/events/bda/${wf}/svc/x`;
        expect((await send(gw.url, path, { headers: apikey(created.key) })).status).toBe(200);
        upstream.seen.length = 0;

        await stopRedis(tag);
        await sleep(50);
        const refused = await send(gw.url, path, { headers: apikey(created.key) });
        expect({ status: refused.status, code: refused.json.code }).toEqual({
          status: 503,
          code: 'redis_unavailable',
        });
        expect(refused.headers['retry-after']).toBe('1');
        const other = generateKey('bda');
        const unknown = await send(gw.url, path, { headers: apikey(other) });
        expect({ status: unknown.status, code: unknown.json.code }).toEqual({
          status: 503,
          code: 'redis_unavailable',
        });
        expect(upstream.seen).toEqual([]);
        expect((await send(gw.url, '/readyz')).status).toBe(503);
        expect((await send(gw.url, '/metrics')).text).toMatch(/^tollgate_gateway_cache_live 0$/m);

        // Back, but empty: until the operator has rebuilt the index (its marker), a key not found
        // may yet exist, so the answer is 503 with Retry-After, never a 401 that would make a
        // client throw its valid key away.
        await restartRedis(tag);
        let answer = await send(gw.url, path, { headers: apikey(created.key) });
        for (let i = 0; i < 60 && answer.json.code !== 'index_rebuilding'; i++) {
          await sleep(50);
          answer = await send(gw.url, path, { headers: apikey(created.key) });
        }
        expect([answer.status, answer.json.code, answer.headers['retry-after']]).toEqual([
          503,
          'index_rebuilding',
          '1',
        ]);
        await registerService(r, wf, 'svc', upstream.url);
        await new KeyIndexWriter(r, await testSealer()).put(created.hash, created.grant);
        expect((await send(gw.url, path, { headers: apikey(created.key) })).status).toBe(200);
        expect((await send(gw.url, '/readyz')).status).toBe(200);
        // The subscription is back, so the caches are trusted again: no Redis GET for repeat calls.
        await sleep(100);
        expect((await send(gw.url, path, { headers: apikey(created.key) })).status).toBe(200);
        const gets = await commandCount(r, 'mget');
        for (let i = 0; i < 5; i++) {
          expect((await send(gw.url, path, { headers: apikey(created.key) })).status).toBe(200);
        }
        expect(await commandCount(r, 'mget')).toBe(gets);
      } finally {
        await gw.stop();
        r.disconnect();
      }
    });
  });

  describe('Redis frozen (connections open, no answers)', () => {
    it('stops trusting its caches within the heartbeat and answers 503', async () => {
      const tag = 'gateway-redis-frozen';
      const info = await redis(tag);
      const r = redisClient(info.url);
      const wf = uniqueName('wf');
      await registerService(r, wf, 'svc', upstream.url);
      const created = await createKey(r, 'bda', [wf]);
      const gw = await startGateway({ redisUrl: info.url });
      const path = `/events/bda/${wf}/svc/x`;
      try {
        expect((await send(gw.url, path, { headers: apikey(created.key) })).status).toBe(200);
        // Paused far longer than the heartbeat's two periods (docs/calling.md), so a loaded
        // machine still sees the refusal while Redis is frozen; how soon it comes is not this
        // test's business. UNPAUSE is itself held by the pause, so it ends the pause's time.
        const pausedAt = Date.now();
        await r.call('CLIENT', 'PAUSE', '8000', 'ALL');
        let answer = await send(gw.url, path, { headers: apikey(created.key) });
        while (answer.status === 200 && Date.now() - pausedAt < 7_500) {
          await sleep(100);
          answer = await send(gw.url, path, { headers: apikey(created.key) });
        }
        expect({ status: answer.status, code: answer.json.code }).toEqual({
          status: 503,
          code: 'redis_unavailable',
        });
        await r.call('CLIENT', 'UNPAUSE');
        await waitUntil(
          'the key passes again once Redis answers',
          async () => (await send(gw.url, path, { headers: apikey(created.key) })).status === 200,
          { timeoutMs: 30_000 },
        );
      } finally {
        await gw.stop();
        r.disconnect();
      }
    });
  });

  describe('graceful shutdown in process', () => {
    it('drains first: still answers, with Connection: close and /readyz 503, then refuses', async () => {
      const info = await redis();
      const r = redisClient(info.url);
      const wf = uniqueName('wf');
      await registerService(r, wf, 'svc', upstream.url);
      const { key } = await createKey(r, 'bda', [wf]);
      upstream.respond = (_req, res) => res.end('ok');
      const gw = await startGateway({ redisUrl: info.url, shutdownDrainMs: 700 });
      try {
        const agent = new Agent({ keepAliveTimeout: 10_000 });
        const get = (path: string, headers: Record<string, string> = {}) =>
          request(`${gw.url}${path}`, { headers, dispatcher: agent });
        const before = await get(`/events/bda/${wf}/svc/x`, apikey(key));
        expect(before.headers['connection']).toBe('keep-alive');
        await before.body.text();
        const stopped = gw.stop();
        await sleep(100);
        const during = await get(`/events/bda/${wf}/svc/x`, apikey(key));
        expect(during.statusCode).toBe(200);
        expect(during.headers['connection']).toBe('close');
        await during.body.text();
        const ready = await get('/readyz');
        expect(ready.statusCode).toBe(503);
        expect(((await ready.body.json()) as { code: string }).code).toBe('shutting_down');
        await sleep(800);
        await expect(send(gw.url, '/healthz')).rejects.toThrow(/ECONNREFUSED/);
        await stopped;
        await agent.close();
      } finally {
        r.disconnect();
      }
    });

    it('stops accepting, completes the in-flight slow request, then closes', async () => {
      const info = await redis();
      const r = redisClient(info.url);
      const wf = uniqueName('wf');
      await registerService(r, wf, 'svc', upstream.url);
      const { key } = await createKey(r, 'bda', [wf]);
      const gw = await startGateway({ redisUrl: info.url });
      let arrived: () => void = () => undefined;
      const reachedUpstream = new Promise<void>((resolve) => (arrived = resolve));
      upstream.respond = (_req, res) => {
        arrived();
        res.write('part one;');
        setTimeout(() => res.end('part two'), 500);
      };
      try {
        const inFlight = send(gw.url, `/events/bda/${wf}/svc/slow`, { headers: apikey(key) });
        await reachedUpstream;
        const stopped = gw.stop();
        await sleep(50);
        await expect(send(gw.url, '/healthz')).rejects.toThrow(/ECONNREFUSED/);
        const answer = await inFlight;
        expect(answer.status).toBe(200);
        expect(answer.text).toBe('part one;part two');
        await stopped;
      } finally {
        r.disconnect();
      }
    });
  });
});
