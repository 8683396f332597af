// What an outside review found at the data plane's edges, each fixed and held here: a client
// trickling its request, a Redis flushed or restarted empty under a running gateway, a frozen
// Redis, and one cut off by the network. Real gateway, real Redis (its own instance, flushed and
// paused here, reached through a relay that can go silent), real sockets.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { generateKey } from '../../../common/apikey/format.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { redis } from '../../harness/index.js';
import { waitUntil } from '../../harness/wait.js';
import { markIndexBuilt } from '../workflow-route.js';
import {
  apikey,
  createKey,
  redisClient,
  registerService,
  send,
  startGateway,
  startUpstream,
  uniqueName,
  type TestGateway,
  type Upstream,
} from './support.js';

const TAG = 'data-plane-limits';
const BODY_TIMEOUT_MS = 1_500;
const HEAD_TIMEOUT_MS = 1_000;
const HEARTBEAT_MS = 250;

let r: Redis;
let upstream: Upstream;
let gw: TestGateway;
const workflow = uniqueName('wf-limits');
let key: string;
let path: string;

beforeAll(async () => {
  const info = await redis(TAG);
  r = redisClient(info.url);
  upstream = await startUpstream();
  gw = await startGateway({
    redisUrl: info.url,
    requestBodyTimeoutMs: BODY_TIMEOUT_MS,
    requestHeadersTimeoutMs: HEAD_TIMEOUT_MS,
    redisHeartbeatMs: HEARTBEAT_MS,
  });
  await registerService(r, workflow, 'svc', upstream.url);
  key = (await createKey(r, 'bda', [workflow])).key;
  path = `/events/bda/${workflow}/svc/upload`;
});

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
  r?.disconnect();
});

/** A raw connection; resolves with everything the gateway wrote once it closes the socket. */
function openRaw(): { socket: Socket; closed: Promise<{ text: string }> } {
  const { hostname, port } = new URL(gw.url);
  const socket = connect(Number(port), hostname);
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString()));
  socket.on('error', () => undefined);
  const closed = new Promise<{ text: string }>((resolve) => socket.once('close', () => resolve({ text })));
  return { socket, closed };
}

async function metric(name: string, labels: string): Promise<number> {
  const text = (await send(gw.url, '/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('a client that trickles its request', () => {
  it('gets 408 request_timeout once its body is late, and the upstream request is cut with it', async () => {
    const abortedBefore = upstream.aborted;
    const countedBefore = await metric('tollgate_gateway_request_timeouts_total', 'phase="body"');
    // Several such clients at once, as in the review: none may hold its connection.
    const clients = Array.from({ length: 20 }, () => openRaw());
    for (const { socket } of clients) {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: t\r\nAuthorization: Apikey ${key}\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n`,
      );
    }
    // One byte every 300 ms: alive, never done.
    const trickle = setInterval(() => {
      for (const { socket } of clients) if (!socket.destroyed) socket.write('x');
    }, 300);
    try {
      const ends = await Promise.all(clients.map((c) => c.closed));
      // Cut by the body's bound (the metric's phase says which bound; when is `make bench`'s).
      for (const { text } of ends) {
        expect(text).toMatch(/^HTTP\/1\.1 408 /);
        expect(text).toContain('"code":"request_timeout"');
        expect(text.toLowerCase()).toContain('connection: close');
      }
    } finally {
      clearInterval(trickle);
    }
    // The upstream saw its requests aborted, not completed.
    for (let i = 0; i < 40 && upstream.aborted < abortedBefore + 20; i++) await sleep(50);
    expect(upstream.aborted).toBe(abortedBefore + 20);
    expect(await metric('tollgate_gateway_request_timeouts_total', 'phase="body"')).toBe(countedBefore + 20);
  }, 20_000);

  it('gets 408 when its request head does not arrive in time', async () => {
    const before = await metric('tollgate_gateway_request_timeouts_total', 'phase="headers"');
    const { socket, closed } = openRaw();
    socket.write(`GET ${path} HTTP/1.1\r\nHost: t\r\n`);
    const trickle = setInterval(() => !socket.destroyed && socket.write('X-Slow: 1\r\n'), 300);
    try {
      const { text } = await closed;
      expect(text).toMatch(/^HTTP\/1\.1 408 /);
      expect(text).toContain('"code":"request_timeout"');
    } finally {
      clearInterval(trickle);
    }
    expect(await metric('tollgate_gateway_request_timeouts_total', 'phase="headers"')).toBe(before + 1);
  }, 10_000);

  it('leaves a body that arrives in time alone, however it is cut up', async () => {
    async function* chunks(): AsyncGenerator<Buffer> {
      for (let i = 0; i < 5; i++) {
        yield Buffer.from(`part ${i};`);
        await sleep(100);
      }
    }
    const res = await send(gw.url, path, {
      method: 'POST',
      headers: { ...apikey(key), 'content-type': 'text/plain' },
      body: chunks(),
    });
    expect(res.status).toBe(200);
    expect(upstream.seen.at(-1)?.body.toString()).toBe('part 0;part 1;part 2;part 3;part 4;');
  });
});

describe('Redis that comes back empty', () => {
  it('answers 503 index_rebuilding with Retry-After, never 401 or 404, until the index is marked built', async () => {
    expect((await send(gw.url, path, { headers: apikey(key) })).status).toBe(200);
    await sleep(HEARTBEAT_MS * 2);
    await r.flushall();
    // The flush empties the caches too (noticed within a heartbeat): the key and the route, both
    // cached, are not served from memory; and a key not found now is not called unknown.
    const answer = await eventuallyAnswer((a) => a.status !== 200);
    expect([answer.status, answer.json.code, answer.headers['retry-after']]).toEqual([
      503,
      'index_rebuilding',
      '1',
    ]);
    const stranger = await send(gw.url, path, { headers: apikey((await createKeyless()).key) });
    expect(stranger.json.code).toBe('index_rebuilding');
    // The operator rebuilds: the same key works again; an unknown one is now unknown.
    await registerService(r, workflow, 'svc', upstream.url);
    const again = await createKey(r, 'bda', [workflow]);
    expect((await send(gw.url, path, { headers: apikey(again.key) })).status).toBe(200);
    const unknown = await send(gw.url, path, { headers: apikey((await createKeyless()).key) });
    expect([unknown.status, unknown.json.code]).toEqual([401, 'unknown_api_key']);
    key = again.key;
  });

  it('refuses, after a flush, a route that the cache alone still knew', async () => {
    const other = uniqueName('wf-cached');
    await registerService(r, other, 'svc', upstream.url);
    const k = await createKey(r, 'bda', [other]);
    const p = `/events/bda/${other}/svc/x`;
    expect((await send(gw.url, p, { headers: apikey(k.key) })).status).toBe(200);
    // The gateway has seen this complete index (it reads the marker every heartbeat).
    await sleep(HEARTBEAT_MS * 2);
    // Redis loses everything but the marker comes back at once (a rebuild that does not know this
    // route any more): the cached route must not outlive the flush.
    await r.flushall();
    await markIndexBuilt(r);
    await sleep(HEARTBEAT_MS * 3);
    await createKey(r, 'bda', [other]).then(async (fresh) => {
      const res = await send(gw.url, p, { headers: apikey(fresh.key) });
      expect([res.status, res.json.code]).toEqual([404, 'unknown_service']);
    });
    expect(await r.exists(redisKeys.bdaRoute(other, 'svc'))).toBe(0);
    // Restore this file's service for the next test.
    await registerService(r, workflow, 'svc', upstream.url);
    key = (await createKey(r, 'bda', [workflow])).key;
  });
});

describe('a frozen Redis', () => {
  // How long cached keys still pass once Redis freezes is measured by `make bench ARGS=gateway`;
  // here, that they stop passing while it is frozen, and pass again when it answers.
  it('stops trusting cached keys while Redis does not answer, then fails closed', async () => {
    // Warm the caches.
    for (let i = 0; i < 3; i++) expect((await send(gw.url, path, { headers: apikey(key) })).status).toBe(200);
    const pauser = redisClient((await redis(TAG)).url);
    const paused = Date.now();
    // Every client's commands wait (the subscriber's pings too): frozen for 8 s, many heartbeats.
    await pauser.call('CLIENT', 'PAUSE', '8000', 'ALL');
    let refused: Awaited<ReturnType<typeof send>> | undefined;
    while (refused === undefined && Date.now() - paused < 7_500) {
      const res = await send(gw.url, path, { headers: apikey(key) });
      if (res.status !== 200) refused = res;
    }
    expect([refused?.status, refused?.json.code]).toEqual([503, 'redis_unavailable']);
    // UNPAUSE waits out the pause itself.
    await pauser.call('CLIENT', 'UNPAUSE');
    pauser.disconnect();
    await eventuallyAnswer((a) => a.status === 200);
  }, 30_000);
});

/**
 * A TCP relay to Redis that can cut the connections it holds without closing them, as a network
 * partition does: the sockets stay open and bytes simply stop. Connections made after the cut
 * pass.
 */
async function partitionableRelay(
  target: URL,
): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const pairs: Array<{ client: Socket; redis: Socket; cut: boolean }> = [];
  const server: Server = createServer((client) => {
    const pair = { client, redis: connect(Number(target.port), target.hostname), cut: false };
    pairs.push(pair);
    client.on('data', (d) => void (pair.cut || pair.redis.write(d)));
    pair.redis.on('data', (d) => void (pair.cut || client.write(d)));
    const end = (): void => {
      client.destroy();
      pair.redis.destroy();
    };
    client.on('close', end).on('error', end);
    pair.redis.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    cut: () => {
      for (const p of pairs) p.cut = true;
    },
    close: async () => {
      for (const p of pairs) {
        p.client.destroy();
        p.redis.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('a Redis cut off by the network', () => {
  it('fails closed, then reconnects on its own: a silent socket is not trusted for ever', async () => {
    const relay = await partitionableRelay(new URL((await redis(TAG)).url));
    const cutOff = await startGateway({ redisUrl: relay.url, redisHeartbeatMs: HEARTBEAT_MS });
    try {
      const call = () => send(cutOff.url, path, { headers: apikey(key) });
      expect((await call()).status).toBe(200);
      const cutAt = Date.now();
      // Every open connection (commands and subscriber) goes silent; no FIN, no RST.
      relay.cut();
      let refused: Awaited<ReturnType<typeof send>> | undefined;
      while (refused === undefined && Date.now() - cutAt < 20_000) {
        const res = await call();
        if (res.status !== 200) refused = res;
      }
      expect([refused?.status, refused?.json.code]).toEqual([503, 'redis_unavailable']);
      // Without a reconnect the command connection would wait on its dead socket until TCP gave
      // up (minutes): the timed-out probe replaces it, through the relay, which passes new ones.
      await waitUntil('answering again through new connections', async () => (await call()).status === 200, {
        timeoutMs: 30_000,
        intervalMs: 50,
      });
    } finally {
      await cutOff.stop();
      await relay.close();
    }
  }, 60_000);
});

async function eventuallyAnswer(
  done: (a: Awaited<ReturnType<typeof send>>) => boolean,
): Promise<Awaited<ReturnType<typeof send>>> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const a = await send(gw.url, path, { headers: apikey(key) });
    if (done(a) || Date.now() > deadline) return a;
    await sleep(20);
  }
}

/** A well-formed key that is in no index. */
const createKeyless = async (): Promise<{ key: string }> => ({ key: generateKey('bda') });
