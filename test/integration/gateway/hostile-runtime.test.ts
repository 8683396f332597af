// A model's runtime runs its model's code (a pickled model is code), so what it answers is the
// model's author's to choose. These are answers no MLServer gives and a hostile model can: the
// runtime here is the author's own server, as a pickled model could make MLServer's. Real
// gateway, real Redis.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { request } from 'undici';
import { redisKeys } from '../../../common/redis/schema.js';
import { RouteWriter } from '../../../common/routes/workflow-routes.js';
import { redis } from '../../harness/index.js';
import { testSealer } from '../signing.js';
import { markIndexBuilt } from '../workflow-route.js';
import { apikey, createKey, redisClient, send, startGateway, type TestGateway } from './support.js';

/** Metadata a well-behaved runtime would give, for the model whose answers are hostile. */
const METADATA = JSON.stringify({
  name: 'model-endless-error',
  platform: 'sklearn',
  inputs: [{ name: 'x', datatype: 'FP64', shape: [-1, 1] }],
  outputs: [{ name: 'y', datatype: 'FP64', shape: [-1] }],
});

/** What the runtime wrote of each endless answer before the gateway hung up on it. */
interface Endless {
  written: number;
  closed: Promise<void>;
}

/**
 * Writes megabyte after megabyte for as long as the reader takes them; the answer never ends.
 * `status`: what it claims the answer is.
 */
function endless(res: ServerResponse, status: number): Endless {
  const chunk = Buffer.alloc(1024 * 1024, 'a');
  const out: Endless = {
    written: 0,
    closed: new Promise((resolve) => res.once('close', () => resolve())),
  };
  res.writeHead(status, { 'content-type': 'application/json' });
  res.write('{"name":"');
  const pump = (): void => {
    while (!res.destroyed) {
      out.written += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
  };
  pump();
  return out;
}

describe('a runtime whose answers never end', () => {
  let r: Redis;
  let gw: TestGateway;
  let runtime: Server;
  const answers: Record<string, Endless> = {};

  beforeAll(async () => {
    runtime = createServer((req: IncomingMessage, res: ServerResponse) => {
      const url = req.url ?? '';
      req.resume();
      if (url === '/v2/models/model-endless-metadata') answers.metadata = endless(res, 200);
      else if (url === '/v2/models/model-endless-error')
        res.writeHead(200, { 'content-type': 'application/json' }).end(METADATA);
      else if (url === '/v2/models/model-endless-error/infer') answers.error = endless(res, 500);
      else res.writeHead(404).end('{"error":"no such model"}');
    });
    await new Promise<void>((resolve) => runtime.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(runtime.address() as AddressInfo).port}`;
    const info = await redis('hostile-runtime');
    r = redisClient(info.url);
    const routes = new RouteWriter(r, await testSealer());
    for (const model of ['model-endless-metadata', 'model-endless-error'])
      await routes.put(redisKeys.modelRoute(model), { url, source: `model/test/${model}` });
    await markIndexBuilt(r);
    gw = await startGateway({ redisUrl: info.url, upstreamTimeoutMs: 30_000 });
  });

  afterAll(async () => {
    await gw?.stop();
    runtime?.closeAllConnections();
    await new Promise((resolve) => runtime?.close(resolve));
    r?.disconnect();
  });

  const infer = (model: string, key: string) =>
    send(gw.url, `/v2/models/${model}/infer`, {
      method: 'POST',
      headers: { ...apikey(key), 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP64', shape: [1, 1], data: [1] }] }),
    });

  // The runtimes here never stop writing: that each call is answered at all shows it was cut off.
  it('metadata past 1 MiB is refused and the runtime cut off, not read to its end', async () => {
    const { key } = await createKey(r, 'platform', ['models:inference']);
    for (const answer of [
      await infer('model-endless-metadata', key),
      await send(gw.url, '/v2/models/model-endless-metadata', { headers: apikey(key) }),
    ]) {
      expect([answer.status, answer.json.code]).toEqual([502, 'model_metadata_unavailable']);
      expect(answer.json.error).toMatch(/answered its V2 metadata with more than 1048576 bytes/);
    }
    // The gateway hung up: what the runtime got out is the limit and what the sockets buffer.
    await answers.metadata?.closed;
    expect(answers.metadata?.written).toBeLessThan(32 * 1024 * 1024);
  });

  it("an error answer is read up to what the gateway keeps of it, and the call answered; the runtime's socket is dropped", async () => {
    const { key } = await createKey(r, 'platform', ['models:inference']);
    const answer = await infer('model-endless-error', key);
    expect([answer.status, answer.json.code]).toEqual([502, 'model_failed']);
    await answers.error?.closed;
    expect(answers.error?.written).toBeLessThan(32 * 1024 * 1024);
    // The gateway is whole: the next call gets the same clear answer.
    const again = await infer('model-endless-error', key);
    expect([again.status, again.json.code]).toEqual([502, 'model_failed']);
  });
});

describe('a runtime that answers only "still working" (1xx)', () => {
  let r: Redis;
  let gw: TestGateway;
  let runtime: Server;
  const timers: NodeJS.Timeout[] = [];
  const model = 'model-interim';
  const trickling = 'model-trickling';
  const bulky = 'model-bulky';
  const BULKY_BYTES = 4 * 1024 * 1024;

  beforeAll(async () => {
    runtime = createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      if (req.url === `/v2/models/${model}`)
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(METADATA.replace('model-endless-error', model));
      else if (req.url === `/v2/models/${model}/infer`)
        // Each 102 restarts undici's own head timer: only a deadline of the gateway's ends the call.
        timers.push(setInterval(() => res.writeProcessing(), 150));
      else if (req.url === `/v2/models/${bulky}/infer`) {
        // 4 MB at once: the runtime is quick, the client below is not.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`{"outputs":[],"pad":"${'p'.repeat(BULKY_BYTES)}"}`);
      } else if (req.url === `/v2/models/${trickling}` || req.url === `/v2/models/${bulky}`)
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(METADATA.replace('model-endless-error', req.url.slice('/v2/models/'.length)));
      else {
        // A head at once, then a byte at a time, each well within undici's pause between chunks.
        res.writeHead(200, { 'content-type': 'application/json' });
        timers.push(setInterval(() => res.write(' '), 150));
      }
    });
    await new Promise<void>((resolve) => runtime.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(runtime.address() as AddressInfo).port}`;
    const info = await redis('hostile-runtime');
    r = redisClient(info.url);
    for (const m of [model, trickling, bulky])
      await new RouteWriter(r, await testSealer()).put(redisKeys.modelRoute(m), {
        url,
        source: `model/test/${m}`,
      });
    await markIndexBuilt(r);
    gw = await startGateway({ redisUrl: info.url, upstreamTimeoutMs: 400 });
  });

  afterAll(async () => {
    timers.forEach(clearInterval);
    await gw?.stop();
    runtime?.closeAllConnections();
    await new Promise((resolve) => runtime?.close(resolve));
    r?.disconnect();
  });

  // This runtime answers 102 for ever, each one restarting undici's own timer: a 504 at all is the
  // gateway's deadline (its length is the setting's; the test gives it 400 ms).
  it('ends an inference held by interim answers with 504 at its own deadline', async () => {
    const { key } = await createKey(r, 'platform', ['models:inference']);
    const answer = await send(gw.url, `/v2/models/${model}/infer`, {
      method: 'POST',
      headers: { ...apikey(key), 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP64', shape: [1, 1], data: [1] }] }),
    });
    expect([answer.status, answer.json.code]).toEqual([504, 'upstream_timeout']);
    expect(answer.json.error).toMatch(/interim \(1xx\)/);
  });

  // A byte every 150 ms for ever, each within undici's pause between chunks: only the gateway's
  // whole-answer deadline ends it.
  it('cuts off an answer trickled a byte at a time at its deadline', async () => {
    const { key } = await createKey(r, 'platform', ['models:inference']);
    // The head was passed on as it came (a 200 answer streams): the caller's answer is cut off.
    const answer = send(gw.url, `/v2/models/${trickling}/infer`, {
      method: 'POST',
      headers: { ...apikey(key), 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP64', shape: [1, 1], data: [1] }] }),
    });
    await expect(answer).rejects.toThrow(/aborted|socket hang up|terminated/);
    // The gateway serves on: the next call is cut off the same way.
    await expect(
      send(gw.url, `/v2/models/${trickling}/infer`, {
        method: 'POST',
        headers: { ...apikey(key), 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP64', shape: [1, 1], data: [1] }] }),
      }),
    ).rejects.toThrow();
  });

  it('a quick runtime’s large answer to a slow client is not cut off by that deadline', async () => {
    const { key } = await createKey(r, 'platform', ['models:inference']);
    const answer = await request(`${gw.url}/v2/models/${bulky}/infer`, {
      method: 'POST',
      headers: { ...apikey(key), 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP64', shape: [1, 1], data: [1] }] }),
    });
    expect(answer.statusCode).toBe(200);
    let received = 0;
    let paused = 0;
    for await (const chunk of answer.body) {
      received += (chunk as Buffer).length;
      // About 1 MB a second: the whole answer takes far past twice the upstream timeout.
      const ms = (chunk as Buffer).length / 1000;
      paused += ms;
      await new Promise((resolve) => setTimeout(resolve, ms));
    }
    expect(received).toBe(BULKY_BYTES + '{"outputs":[],"pad":""}'.length);
    // The premise: this client alone spent more than twice the deadline reading.
    expect(paused).toBeGreaterThan(2 * 400);
  });
});
