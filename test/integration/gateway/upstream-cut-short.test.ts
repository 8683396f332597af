// A workflow service is its team's own code: it may start an answer and never finish it (its pod
// killed mid-answer, a connection dropped, a pause past the body timeout, or on purpose). The
// gateway has passed the head on by then, so the caller's answer is cut off too; the gateway
// process, which serves every other team, goes on. Run as a real process: one that died would
// show here as an exit, not as an error the test runner swallowed.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { redis } from '../../harness/index.js';
import { spawnGateway, type GatewayProcess } from './process.js';
import {
  apikey,
  createKey,
  redisClient,
  registerService,
  send,
  startUpstream,
  uniqueName,
  type Upstream,
} from './support.js';

/** A raw server: each connection gets `answer` and then whatever `then` does with the socket. */
async function rawUpstream(answer: string, then: (socket: Socket) => void): Promise<Server> {
  const server = createServer((socket) => {
    socket.once('data', () => {
      socket.write(answer);
      then(socket);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}
const urlOf = (s: Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

describe('an upstream that cuts its answer short', () => {
  let gw: GatewayProcess;
  let r: ReturnType<typeof redisClient>;
  let upstream: Upstream;
  let bda: { key: string };
  const wf = uniqueName('wf');
  const servers: Server[] = [];
  const held: Socket[] = [];

  beforeAll(async () => {
    const info = await redis();
    r = redisClient(info.url);
    upstream = await startUpstream();
    const head = 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n';
    const dropped = await rawUpstream(`${head}content-length: 100\r\n\r\nabc`, (s) => s.destroy());
    const silent = await rawUpstream(`${head}content-length: 100\r\n\r\nabc`, (s) => held.push(s));
    const badChunk = await rawUpstream(
      `${head}transfer-encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n`,
      () => undefined,
    );
    servers.push(dropped, silent, badChunk);
    await registerService(r, wf, 'ok', upstream.url);
    await registerService(r, wf, 'dropped', urlOf(dropped));
    await registerService(r, wf, 'silent', urlOf(silent));
    await registerService(r, wf, 'bad-chunk', urlOf(badChunk));
    gw = await spawnGateway({
      TOLLGATE_REDIS_URL: info.url,
      TOLLGATE_UPSTREAM_TIMEOUT_MS: '500',
      LOG_LEVEL: 'warn',
    });
    bda = await createKey(r, 'bda', [wf]);
  }, 30_000);

  afterAll(async () => {
    if (gw !== undefined && gw.child.exitCode === null) {
      gw.child.kill('SIGKILL');
      await gw.exited;
    }
    held.forEach((s) => s.destroy());
    for (const s of servers) await new Promise((resolve) => s.close(resolve));
    await upstream?.close();
    r?.disconnect();
  });

  it.each([
    ['drops its connection after the head and part of the body', 'dropped'],
    ['pauses past the body timeout after the head', 'silent'],
    ['sends a malformed chunk after the head', 'bad-chunk'],
  ])('%s: the caller’s answer is cut off, and the gateway serves on', async (_what, service) => {
    for (let i = 0; i < 3; i++) {
      const res = await request(`${gw.url}/events/bda/${wf}/${service}/x`, {
        headers: apikey(bda.key),
      });
      // The head passed on as the upstream sent it; its body can only end in an error.
      expect(res.statusCode).toBe(200);
      await expect(res.body.text()).rejects.toThrow();
    }
    expect(gw.child.exitCode).toBeNull();
    const after = await send(gw.url, `/events/bda/${wf}/ok/y`, { headers: apikey(bda.key) });
    expect(after.status).toBe(200);
    expect(gw.output()).not.toMatch(/ERR_HTTP_HEADERS_SENT|uncaught/i);
  });
});
