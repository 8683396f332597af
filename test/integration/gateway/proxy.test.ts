import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request as undiciRequest } from 'undici';
import { redisKeys } from '../../../common/redis/schema.js';
import { freePort, redis } from '../../harness/index.js';
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

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('gateway proxying', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let r: ReturnType<typeof redisClient>;
  const wf = uniqueName('wf');
  let bda: Awaited<ReturnType<typeof createKey>>;
  let stream: { server: Server; url: string; firstChunk?: () => void; release?: () => void };

  beforeAll(async () => {
    const info = await redis();
    r = redisClient(info.url);
    upstream = await startUpstream();
    // A second upstream for streaming: reports the first body chunk as it arrives, and answers in
    // two parts with a pause the test controls.
    const s = createServer((req: IncomingMessage, res) => {
      if (req.url?.startsWith('/upload')) {
        let total = 0;
        req.on('data', (c: Buffer) => {
          if (total === 0) stream.firstChunk?.();
          total += c.length;
        });
        req.on('end', () => res.end(String(total)));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first;');
      stream.release = () => res.end('second');
    });
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    stream = { server: s, url: `http://127.0.0.1:${(s.address() as AddressInfo).port}` };

    await registerService(r, wf, 'svc', upstream.url);
    await registerService(r, wf, 'stream', stream.url);
    await registerService(r, wf, 'down', `http://127.0.0.1:${await freePort()}`);
    gw = await startGateway({
      redisUrl: info.url,
      upstreams: { datasets: `${upstream.url}/platform` },
      upstreamTimeoutMs: 400,
      usageFlushMs: 50,
    });
    bda = await createKey(r, 'bda', [wf]);
  });

  afterAll(async () => {
    await gw.stop();
    await upstream.close();
    stream.server.closeAllConnections();
    stream.server.close();
    r.disconnect();
  });

  beforeEach(() => {
    upstream.seen.length = 0;
    upstream.respond = (req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ method: req.method, url: req.url }));
    };
  });

  it('passes path, query and body through, and the grant instead of the key', async () => {
    const answer = await send(gw.url, `/events/bda/${wf}/svc/orders/42/?sort=desc&q=a%2Fb&q=%E2%9C%93`, {
      method: 'POST',
      headers: { ...apikey(bda.key), 'content-type': 'application/json', 'x-custom': 'kept' },
      body: '{"n":1}',
    });
    expect(answer.status).toBe(200);
    const [seen] = upstream.seen;
    expect(seen?.url).toBe('/orders/42/?sort=desc&q=a%2Fb&q=%E2%9C%93');
    expect(seen?.method).toBe('POST');
    expect(seen?.body.toString()).toBe('{"n":1}');
    expect(seen?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(seen?.headers)).not.toContain(bda.key);
    expect(seen?.headers['x-custom']).toBe('kept');
    expect(seen?.headers['x-tollgate-key-id']).toBe(bda.grant.id);
    expect(seen?.headers['x-tollgate-module']).toBe('bda');
    expect(seen?.headers['x-tollgate-roles']).toBe(wf);
    expect(seen?.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.headers['x-request-id']).toBe(seen?.headers['x-request-id']);
  });

  it('propagates a caller X-Request-Id and replaces forged grant headers, hop-by-hop ones and names with underscores', async () => {
    upstream.respond = (_req, res) => {
      res.setHeader('connection', 'close, x-internal');
      res.setHeader('x-internal', 'hop');
      res.setHeader('x-visible', 'end-to-end');
      res.end('ok');
    };
    const answer = await send(gw.url, `/events/bda/${wf}/svc/x`, {
      headers: {
        ...apikey(bda.key),
        'x-request-id': 'trace-123.abc',
        'x-tollgate-key-id': 'forged',
        'x-tollgate-roles': 'other-workflow',
        'x-tollgate-module': 'platform',
        'x-tollgate-owner': 'someone-else',
        // What CGI-style servers (Puma, Unicorn, Gunicorn) read as X-Tollgate-Roles and as a
        // method override.
        x_tollgate_roles: 'admin',
        X_HTTP_METHOD_OVERRIDE: 'DELETE',
        'x-plain_name': 'underscored',
        connection: 'x-secret',
        'x-secret': 'hop',
        te: 'trailers',
      },
    });
    expect(answer.status).toBe(200);
    const headers = upstream.seen[0]?.headers ?? {};
    expect(headers['x-request-id']).toBe('trace-123.abc');
    expect(headers['x-tollgate-key-id']).toBe(bda.grant.id);
    expect(headers['x-tollgate-roles']).toBe(wf);
    expect(headers['x-tollgate-module']).toBe('bda');
    expect(headers['x-tollgate-owner']).toBeUndefined();
    expect(Object.keys(headers).filter((name) => name.includes('_'))).toEqual([]);
    expect(headers['x-secret']).toBeUndefined();
    expect(headers.te).toBeUndefined();
    expect(answer.headers['x-internal']).toBeUndefined();
    expect(answer.headers['x-visible']).toBe('end-to-end');
    expect(answer.headers['x-request-id']).toBe('trace-123.abc');
  });

  it('tells the upstream how the client came in itself: a caller that reached it directly cannot say', async () => {
    const told = {
      'x-forwarded-host': 'evil.example.test',
      'x-forwarded-proto': 'https',
      forwarded: 'for=192.0.2.1;host=evil.example.test;proto=https',
      'x-real-ip': '192.0.2.1',
      'x-forwarded-for': '192.0.2.1',
      'x-original-url': '/admin',
    };
    const direct = await send(gw.url, `/events/bda/${wf}/svc/x`, {
      headers: { ...apikey(bda.key), ...told },
    });
    expect(direct.status).toBe(200);
    const seen = upstream.seen[0]?.headers ?? {};
    expect([seen['x-forwarded-host'], seen['x-forwarded-proto']]).toEqual([new URL(gw.url).host, 'http']);
    expect(seen['x-forwarded-for']).toBe('127.0.0.1');
    expect([seen.forwarded, seen['x-real-ip'], seen['x-original-url']]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);

    // Behind an ingress it trusts, the ingress's word is kept.
    const behind = await startGateway({
      redisUrl: gw.services.config.redisUrl,
      trustedProxies: 1,
      trustedProxyCidrs: ['127.0.0.1/32'],
    });
    try {
      upstream.seen.length = 0;
      const proxied = await send(behind.url, `/events/bda/${wf}/svc/x`, {
        headers: { ...apikey(bda.key), ...told },
      });
      expect(proxied.status).toBe(200);
      const kept = upstream.seen[0]?.headers ?? {};
      expect([kept['x-forwarded-host'], kept['x-forwarded-proto']]).toEqual(['evil.example.test', 'https']);
      expect(kept['x-forwarded-for']).toBe('192.0.2.1, 127.0.0.1');
      // Nor does any proxy get to name the client in headers the gateway does not write.
      expect([kept.forwarded, kept['x-real-ip']]).toEqual([undefined, undefined]);
    } finally {
      await behind.stop();
    }
  });

  it('sends platform calls to the configured upstream under /api/v1/<resource>', async () => {
    const { key } = await createKey(r, 'platform', ['datasets:editor']);
    const answer = await send(gw.url, '/events/platform/api/v1/datasets/9?expand=1', {
      method: 'PUT',
      headers: apikey(key),
      body: 'x',
    });
    expect(answer.status).toBe(200);
    expect(upstream.seen.map((s) => `${s.method} ${s.url} ${s.headers['x-tollgate-roles']}`)).toEqual([
      'PUT /platform/api/v1/datasets/9?expand=1 datasets:editor',
    ]);
  });

  it('streams the request body: the upstream gets the first chunk before the client sends the last', async () => {
    const firstArrived = new Promise<void>((resolve) => {
      stream.firstChunk = resolve;
    });
    async function* body(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(1000, 1);
      await firstArrived; // never resolves if the gateway buffers the whole body
      yield Buffer.alloc(2000, 2);
    }
    const answer = await send(gw.url, `/events/bda/${wf}/stream/upload`, {
      method: 'POST',
      headers: apikey(bda.key),
      body: body(),
    });
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('3000');
  });

  it('streams the response: the client reads the first part before the upstream sends the rest', async () => {
    const res = await undiciRequest(`${gw.url}/events/bda/${wf}/stream/slow`, { headers: apikey(bda.key) });
    expect(res.statusCode).toBe(200);
    const reader = res.body[Symbol.asyncIterator]();
    const first = await reader.next();
    expect(Buffer.from(first.value as Buffer).toString()).toBe('first;');
    stream.release?.();
    let rest = '';
    for (let next = await reader.next(); !next.done; next = await reader.next()) {
      rest += Buffer.from(next.value as Buffer).toString();
    }
    expect(rest).toBe('second');
  });

  it('answers 502 when the upstream refuses connections', async () => {
    const answer = await send(gw.url, `/events/bda/${wf}/down/x`, { headers: apikey(bda.key) });
    expect({ status: answer.status, code: answer.json.code }).toEqual({
      status: 502,
      code: 'upstream_connection_failed',
    });
  });

  it('tries a connection that could not be made once more, for any method, before a byte is sent', async () => {
    const port = await freePort();
    await registerService(r, wf, 'late', `http://127.0.0.1:${port}`);
    let got = '';
    const late = createServer((req, res) => {
      req.on('data', (d: Buffer) => (got += d.toString()));
      req.on('end', () => res.end(`${req.method} ${got}`));
    });
    // The upstream starts listening just after the first attempt was refused.
    setTimeout(() => late.listen(port, '127.0.0.1'), 30);
    try {
      const answer = await send(gw.url, `/events/bda/${wf}/late/x`, {
        method: 'POST',
        headers: { ...apikey(bda.key), 'content-type': 'text/plain' },
        body: 'the whole body',
      });
      expect([answer.status, answer.text]).toEqual([200, 'POST the whole body']);
    } finally {
      late.close();
    }
  });

  it('answers 504 when the upstream does not answer in time', async () => {
    upstream.respond = () => undefined; // never answers: a 504 at all is the gateway's deadline
    const answer = await send(gw.url, `/events/bda/${wf}/svc/slow`, { headers: apikey(bda.key) });
    expect({ status: answer.status, code: answer.json.code }).toEqual({
      status: 504,
      code: 'upstream_timeout',
    });
  });

  it('answers 504 when the upstream sends only interim (1xx) answers past its time', async () => {
    const port = await freePort();
    await registerService(r, wf, 'interim', `http://127.0.0.1:${port}`);
    const timers: NodeJS.Timeout[] = [];
    // Each 102 restarts undici's own head timer: without a deadline of the gateway's the call
    // would be held for as long as the upstream likes.
    const stalling = createServer((_req, res) => {
      timers.push(setInterval(() => res.writeProcessing(), 150));
    });
    await new Promise<void>((resolve) => stalling.listen(port, '127.0.0.1', resolve));
    try {
      const answer = await send(gw.url, `/events/bda/${wf}/interim/x`, { headers: apikey(bda.key) });
      expect({ status: answer.status, code: answer.json.code }).toEqual({
        status: 504,
        code: 'upstream_timeout',
      });
      expect(answer.json.error).toMatch(/interim \(1xx\)/);
    } finally {
      timers.forEach(clearInterval);
      stalling.closeAllConnections();
      stalling.close();
    }
  });

  it('answers 503 when the upstream host does not resolve', async () => {
    await registerService(r, wf, 'gone', 'http://tollgate-no-such-host.invalid:8080');
    const answer = await send(gw.url, `/events/bda/${wf}/gone/x`, { headers: apikey(bda.key) });
    expect({ status: answer.status, code: answer.json.code }).toEqual({
      status: 503,
      code: 'upstream_unavailable',
    });
  });

  it('picks up a route change at once (routes channel)', async () => {
    const moved = await startUpstream();
    try {
      await registerService(r, wf, 'moving', upstream.url);
      expect((await send(gw.url, `/events/bda/${wf}/moving/x`, { headers: apikey(bda.key) })).status).toBe(
        200,
      );
      await registerService(r, wf, 'moving', moved.url);
      await sleep(30);
      expect((await send(gw.url, `/events/bda/${wf}/moving/x`, { headers: apikey(bda.key) })).status).toBe(
        200,
      );
      expect(moved.seen).toHaveLength(1);
    } finally {
      await moved.close();
    }
  });

  it('rate-limits a key with 429 and Retry-After, in Redis', async () => {
    const limited = await createKey(r, 'bda', [wf], { rateLimit: { requests: 3, windowSeconds: 60 } });
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 5; i++) {
      last = await send(gw.url, `/events/bda/${wf}/svc/x`, { headers: apikey(limited.key) });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(last?.json.code).toBe('rate_limited');
    const retryAfter = Number(last?.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(upstream.seen).toHaveLength(3);
    // The window's counter expires a second after its window ends, set on its first call and
    // never pushed back.
    const [counter] = await r.keys(`${redisKeys.rateLimit(limited.grant.id, 0).replace(/0$/, '')}*`);
    expect(await r.get(counter!)).toBe('5');
    const windowEndS = Number(counter!.slice(counter!.lastIndexOf(':') + 1)) + 60;
    const ttl = await r.ttl(counter!);
    const left = windowEndS - Date.now() / 1000;
    expect(ttl).toBeGreaterThan(left - 2);
    // Whole seconds both ways: EXPIRE's argument rounded up, and TTL's answer rounded.
    expect(ttl).toBeLessThanOrEqual(left + 3);
  });

  it('holds a key to every one of its named limits, naming the one a call did not fit', async () => {
    const upTo = upstream.seen.length;
    // A day's windows: a test run never straddles one (they start at midnight UTC).
    const limited = await createKey(r, 'bda', [wf], {
      rateLimit: { requests: 100, windowSeconds: 86_400 },
      limits: [
        { name: 'burst', requests: 3, windowSeconds: 86_400 },
        { name: 'per-day', requests: 5, windowSeconds: 86_400 },
      ],
    });
    const answers = [];
    for (let i = 0; i < 4; i++)
      answers.push(await send(gw.url, `/events/bda/${wf}/svc/x`, { headers: apikey(limited.key) }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429]);
    const refused = answers[3]!;
    expect([refused.json.code, refused.headers['tollgate-limit']]).toEqual(['rate_limited', 'burst']);
    expect(refused.json.error).toMatch(
      /^this key's limit "burst" allows 3 requests per 86400 s; retry after \d+ s$/,
    );
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(upstream.seen.length - upTo).toBe(3);
    // Each limit is its own counter in Redis (one round trip counts them all), with its window's expiry.
    const counters = await r.keys(`${redisKeys.rateLimit(limited.grant.id, 0).replace(/0$/, '')}*`);
    expect(counters).toHaveLength(3);
    for (const c of counters) expect(await r.ttl(c)).toBeGreaterThan(0);

    // A key whose tighter limit is a named one: that one is named, even with the plain limit met too.
    const quota = await createKey(r, 'bda', [wf], {
      rateLimit: { requests: 2, windowSeconds: 86_400 },
      limits: [{ name: 'quota', requests: 1, windowSeconds: 86_400 }],
    });
    const first = await send(gw.url, `/events/bda/${wf}/svc/x`, { headers: apikey(quota.key) });
    const second = await send(gw.url, `/events/bda/${wf}/svc/x`, { headers: apikey(quota.key) });
    expect([first.status, second.status, second.headers['tollgate-limit']]).toEqual([200, 429, 'quota']);
  });

  it('records last use and request counts off the request path', async () => {
    const counted = await createKey(r, 'bda', [wf]);
    const before = Date.now();
    for (let i = 0; i < 4; i++)
      await send(gw.url, `/events/bda/${wf}/svc/x`, { headers: apikey(counted.key) });
    await sleep(200);
    const usage = await r.hgetall(redisKeys.keyUsage(counted.grant.id));
    expect(Number(usage.count)).toBe(4);
    expect(Date.parse(usage.lastUsed ?? '')).toBeGreaterThanOrEqual(before - 1000);
  });

  it('exposes metrics, health and readiness; /v2 and unknown paths answer 404 with a code', async () => {
    await send(gw.url, `/events/bda/${wf}/svc/x`, { headers: apikey(bda.key) });
    await send(gw.url, `/events/bda/${wf}/svc/x`, { headers: { authorization: 'apikey nope' } });
    const metrics = await send(gw.url, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(
      /tollgate_gateway_requests_total\{kind="bda",status="200",module="bda"\} \d+/,
    );
    expect(metrics.text).toMatch(/tollgate_gateway_auth_failures_total\{code="invalid_auth_scheme"\} \d+/);
    expect(metrics.text).toMatch(
      /tollgate_gateway_upstream_duration_seconds_bucket\{le="0.005",kind="bda"\} \d+/,
    );
    expect(metrics.text).toMatch(/^tollgate_gateway_cache_live 1$/m);
    expect(metrics.text).not.toContain(bda.key);
    expect((await send(gw.url, '/healthz')).status).toBe(200);
    expect((await send(gw.url, '/readyz')).json).toEqual({ status: 'ready' });
    // V2 model endpoints need a key like every checked path.
    const v2 = await send(gw.url, '/v2/models/m/infer', { method: 'POST' });
    expect(v2.status).toBe(401);
    expect(v2.json.code).toBe('missing_api_key');
    const unknown = await send(gw.url, '/nowhere');
    expect({ status: unknown.status, code: unknown.json.code }).toEqual({
      status: 404,
      code: 'unknown_endpoint',
    });
    const events = await send(gw.url, '/events/other/x', { headers: apikey(bda.key) });
    expect({ status: events.status, code: events.json.code }).toEqual({
      status: 404,
      code: 'unknown_endpoint',
    });
  });

  it('with a metrics port, serves /metrics there alone: the traffic port answers it 404, whatever its spelling', async () => {
    const info = await redis();
    const apart = await startGateway({ redisUrl: info.url, metricsPort: await freePort() });
    try {
      const ops = `http://127.0.0.1:${apart.gateway.metricsAddress()?.port ?? 0}`;
      await send(apart.url, `/events/bda/${wf}/svc/x`, { headers: apikey(bda.key) });
      const metrics = await send(ops, '/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.text).toMatch(
        /tollgate_gateway_requests_total\{kind="bda",status="200",module="bda"\} \d+/,
      );
      for (const path of ['/metrics', '/METRICS', '/metrics/', '/metrics?x=1', '/%6detrics']) {
        const refused = await send(apart.url, path);
        expect([path, refused.status, refused.json.code]).toEqual([path, 404, 'unknown_endpoint']);
        expect(refused.text).not.toContain('tollgate_gateway');
      }
      // The probes answer on both ports: a kubelet's checks need not move.
      for (const base of [apart.url, ops]) {
        expect((await send(base, '/healthz')).status).toBe(200);
        expect((await send(base, '/readyz')).json).toEqual({ status: 'ready' });
      }
      // The metrics port carries nothing else: no call is proxied through it.
      const through = await send(ops, `/events/bda/${wf}/svc/x`, { headers: apikey(bda.key) });
      expect([through.status, through.json.code]).toEqual([404, 'unknown_endpoint']);
    } finally {
      await apart.stop();
    }
    // Stopped with the gateway.
    await expect(
      fetch(`http://127.0.0.1:${apart.gateway.metricsAddress()?.port ?? 0}/metrics`),
    ).rejects.toThrow();
  });
});
