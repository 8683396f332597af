// No team can take a replica away from the others: what one client address or one key owner
// holds (connections, idle keep-alive slots, calls in flight to an upstream that never answers)
// leaves room for everyone else. Real gateway, real Redis, real sockets from several loopback
// addresses (each its own client).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { ServerResponse } from 'node:http';
import type { Redis } from 'ioredis';
import { redis } from '../../harness/index.js';
import { waitUntil } from '../../harness/wait.js';
import { putWorkflowRoute } from '../workflow-route.js';
import {
  createKey,
  redisClient,
  send,
  startGateway,
  startUpstream,
  uniqueName,
  type TestGateway,
  type Upstream,
} from './support.js';

let r: Redis;
let upstream: Upstream;
let gw: TestGateway;
/** The upstream's calls to `/hang`, held open until the test lets them go. */
const hanging: ServerResponse[] = [];
const owners = ['alice', 'bob', 'carol'] as const;
const workflows = Object.fromEntries(owners.map((o) => [o, uniqueName(`wf-${o}`)])) as Record<
  (typeof owners)[number],
  string
>;
const keys: Record<string, string> = {};

beforeAll(async () => {
  const info = await redis('fair-shares');
  r = redisClient(info.url);
  upstream = await startUpstream();
  upstream.respond = (req, res) => {
    if (req.url?.endsWith('/hang') === true) hanging.push(res);
    else res.end('ok');
  };
  gw = await startGateway({
    redisUrl: info.url,
    // A quarter each: 16 connections per address.
    maxConnections: 64,
    keepAlivePerAddress: 2,
    callsPerOwner: 4,
    callsPerAddress: 8,
  });
  for (const owner of owners) {
    await putWorkflowRoute(r, { workflow: workflows[owner], service: 'svc', url: upstream.url, owner });
    keys[owner] = (await createKey(r, 'bda', [workflows[owner]], { owner })).key;
  }
});

afterAll(async () => {
  for (const res of hanging) res.end();
  await gw?.stop();
  await upstream?.close();
  r?.disconnect();
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  json: { code?: string; error?: string };
}

/** One call to `owner`'s workflow from `from`, on a connection of its own (or `agent`'s). */
function call(owner: (typeof owners)[number], from: string, tail = 'ping', agent?: Agent): Promise<Answer> {
  const { port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        localAddress: from,
        path: `/events/bda/${workflows[owner]}/svc/${tail}`,
        headers: { authorization: `Apikey ${keys[owner] ?? ''}` },
        agent: agent ?? false,
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          let json = {};
          try {
            json = JSON.parse(text) as Answer['json'];
          } catch {
            json = {};
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A raw connection from `from`; `request` is sent at once if given. */
function raw(
  from: string,
  request?: string,
): { socket: Socket; closed: () => boolean; answers: () => number } {
  const { port } = new URL(gw.url);
  const socket = connect({ port: Number(port), host: '127.0.0.1', localAddress: from });
  let closed = false;
  let text = '';
  socket.on('error', () => undefined);
  socket.on('data', (c: Buffer) => (text += c.toString()));
  socket.once('close', () => (closed = true));
  if (request !== undefined) socket.write(request);
  return { socket, closed: () => closed, answers: () => text.split('HTTP/1.1 200').length - 1 };
}

async function refusedMetric(labels: string): Promise<number> {
  const text = (await send(gw.url, '/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`tollgate_gateway_share_refusals_total{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('connections', () => {
  it('one address opening many keep-alive connections keeps its share and at most its idle slots; another address is answered every time', async () => {
    const flood = Array.from({ length: 40 }, () => raw('127.0.0.2'));
    try {
      // Its share (a quarter of 64) is kept; the rest are closed as they come.
      await waitUntil(
        '24 of its connections are closed',
        async () => flood.filter((c) => c.closed()).length >= 24,
        { timeoutMs: 10_000 },
      );
      const kept = flood.filter((c) => !c.closed());
      expect(kept).toHaveLength(16);
      // Each kept one asks once and then idles: answered, and all but two idle slots closed.
      for (const c of kept) c.socket.write('GET /v2/health/live HTTP/1.1\r\nHost: gw\r\n\r\n');
      await waitUntil('every kept connection is answered', async () => kept.every((c) => c.answers() === 1), {
        timeoutMs: 10_000,
      });
      await waitUntil(
        'at most two of its connections stay open',
        async () => flood.filter((c) => !c.closed()).length <= 2,
        { timeoutMs: 10_000 },
      );
      // The other client's 200 calls, each on a connection of its own, are all answered.
      const statuses: number[] = [];
      for (let i = 0; i < 200; i++) statuses.push((await call('alice', '127.0.0.1')).status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(200);
    } finally {
      for (const c of flood) c.socket.destroy();
    }
  });

  it('a port filled by connections that never send anything lets a newcomer in, in place of an idle one', async () => {
    // Four addresses take their sixteen each: the port's 64, none of them ever sending a byte.
    const silent = ['127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6'].flatMap((from) =>
      Array.from({ length: 16 }, () => raw(from)),
    );
    try {
      // A keep-alive client from another address gets in, and keeps getting answered.
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const statuses: number[] = [];
      for (let i = 0; i < 50; i++) statuses.push((await call('alice', '127.0.0.7', 'ping', agent)).status);
      agent.destroy();
      expect(statuses.filter((s) => s === 200)).toHaveLength(50);
      // One of the silent connections gave its place; the rest are still open.
      expect(silent.filter((c) => c.closed()).length).toBeGreaterThanOrEqual(1);
      expect(silent.filter((c) => !c.closed()).length).toBeGreaterThanOrEqual(60);
    } finally {
      for (const c of silent) c.socket.destroy();
    }
  });
});

describe('calls in flight', () => {
  it('an owner whose calls hang on an upstream that never answers is refused past its share (429 too_many_calls); other owners are answered', async () => {
    const before = await refusedMetric('share="calls_per_owner",team="alice"');
    const held = Array.from({ length: 4 }, () => call('alice', '127.0.0.8', 'hang'));
    await waitUntil('her four calls reach the upstream', async () => hanging.length >= 4, {
      timeoutMs: 10_000,
    });
    const fifth = await call('alice', '127.0.0.9');
    expect(fifth.status).toBe(429);
    expect(fifth.headers['retry-after']).toBe('1');
    expect(fifth.json.code).toBe('too_many_calls');
    expect(fifth.json.error).toMatch(/your keys have 4 calls in flight on this replica .*callsPerOwner/);
    expect(await refusedMetric('share="calls_per_owner",team="alice"')).toBe(before + 1);
    // bob, from the same address as her held calls, is answered.
    expect((await call('bob', '127.0.0.8')).status).toBe(200);
    // Her calls answered, her share comes back.
    for (const res of hanging.splice(0)) res.end('late');
    expect((await Promise.all(held)).map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect((await call('alice', '127.0.0.9')).status).toBe(200);
  });

  it('pipelined calls dropped with their connection give back what they held: their owner and address have their whole share again', async () => {
    const seenBefore = upstream.seen.length;
    // One held call, and three more pipelined behind it on the same connection.
    const head = (tail: string) =>
      `GET /events/bda/${workflows.carol}/svc/${tail} HTTP/1.1\r\nHost: gw\r\nAuthorization: Apikey ${keys.carol ?? ''}\r\n\r\n`;
    const piped = raw('127.0.0.12', head('hang') + head('ping') + head('ping') + head('ping'));
    await waitUntil(
      'the held call and the three behind it reach the upstream',
      async () => hanging.length >= 1 && upstream.seen.length >= seenBefore + 4,
      { timeoutMs: 10_000 },
    );
    // The connection goes with three answers queued behind the held one.
    piped.socket.destroy();
    await waitUntil(
      'the held call is cut',
      async () => hanging.every((r) => r.destroyed || r.writableEnded) || hanging.length === 0,
      { timeoutMs: 10_000 },
    );
    hanging.splice(0);
    // carol's four slots are hers again: four held calls, from that address, then the fifth refused.
    const held = Array.from({ length: 4 }, () => call('carol', '127.0.0.12', 'hang'));
    await waitUntil('her four calls reach the upstream', async () => hanging.length >= 4, {
      timeoutMs: 10_000,
    });
    const fifth = await call('carol', '127.0.0.13');
    expect([fifth.status, fifth.json.code]).toEqual([429, 'too_many_calls']);
    for (const res of hanging.splice(0)) res.end('late');
    expect((await Promise.all(held)).map((a) => a.status)).toEqual([200, 200, 200, 200]);
  });

  it('one address holds at most its share of calls in flight, whoever owns them; another address is answered', async () => {
    const before = await refusedMetric('share="calls_per_address",team=""');
    // alice's and bob's four each, from one address: the address's share (8).
    const held = [
      ...Array.from({ length: 4 }, () => call('alice', '127.0.0.10', 'hang')),
      ...Array.from({ length: 4 }, () => call('bob', '127.0.0.10', 'hang')),
    ];
    await waitUntil('the eight calls reach the upstream', async () => hanging.length >= 8, {
      timeoutMs: 10_000,
    });
    // carol's first call, from that address, is past the address's share.
    const ninth = await call('carol', '127.0.0.10');
    expect(ninth.status).toBe(429);
    expect(ninth.headers['retry-after']).toBe('1');
    expect(ninth.json.code).toBe('too_many_calls');
    expect(ninth.json.error).toMatch(/your address has 8 calls in flight on this replica.*callsPerAddress/);
    // carol from another address is answered.
    expect((await call('carol', '127.0.0.11')).status).toBe(200);
    for (const res of hanging.splice(0)) res.end('late');
    expect((await Promise.all(held)).map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(await refusedMetric('share="calls_per_address",team=""')).toBe(before + 1);
  });
});
