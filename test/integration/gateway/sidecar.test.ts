import { setTimeout as sleep } from 'node:timers/promises';
// The gateway as a sidecar in front of one workload: the same key check, errors, metrics and
// fail-closed behaviour as the central gateway, every path being the workload's own. In-process
// for the behaviour, and `tollgate sidecar` as a process for the command itself.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { importJWK, SignJWT, type JWK } from 'jose';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { KeyIndexWriter } from '../../../common/apikey/index-writer.js';
import { type GatewayServices } from '../../../gateway/services.js';
import { GrantSigner } from '../../../gateway/auth/signed-grant.js';
import { createSidecar, type Sidecar } from '../../../gateway/sidecar/sidecar.js';
import { freePort, redis, restartRedis, stopRedis } from '../../harness/index.js';
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
  sidecarServices,
} from './support.js';
import { putWorkflowRoute } from '../workflow-route.js';
import { SIDECAR_NODE_OPTIONS } from '../../../common/sidecar-runtime.js';
import { APP_PROBES_ENV } from '../../../common/sidecar-probes.js';
import { InferenceClient, refusal } from '../../harness/grpc-clients.js';
import { testSealer, TEST_SIGNING_KEY_FILE, TEST_TRUSTED_KEYS } from '../signing.js';

const run = promisify(execFile);
const TSX = new URL('../../../node_modules/tsx/dist/cli.mjs', import.meta.url).pathname;
const CLI = new URL('../../../cli/main.ts', import.meta.url).pathname;
const BIN = new URL('../../../bin/tollgate.js', import.meta.url).pathname;
const TAG = 'sidecar';

describe('the gateway as a sidecar', () => {
  let rc: Redis;
  let upstream: Upstream;
  let services: GatewayServices;
  let sidecar: Sidecar;
  let base: string;
  let ops: Server;
  let opsBase: string;
  const workflow = uniqueName('wf-side');

  beforeAll(async () => {
    const r = await redis(TAG);
    rc = redisClient(r.url);
    upstream = await startUpstream();
    services = await sidecarServices(r.url);
    sidecar = createSidecar(services, {
      kind: 'workflow',
      namespace: 'default',
      upstream: new URL(`${upstream.url}/base`),
      workflow,
      service: 'scorer',
    });
    base = `http://127.0.0.1:${(await sidecar.traffic.listen(0, '127.0.0.1')).port}`;
    ops = sidecar.operations.listen(0, '127.0.0.1');
    await new Promise((r) => ops.once('listening', r));
    opsBase = `http://127.0.0.1:${(ops.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    ops?.close();
    await sidecar?.traffic.shutdown();
    await upstream?.close();
    rc?.disconnect();
  });

  it('passes a bda key of its workflow to the workload: the path as sent, the grant, never the key', async () => {
    const { key, grant } = await createKey(rc, 'bda', [workflow]);
    const before = upstream.seen.length;
    const r = await send(base, '/score/42?explain=1&x=%2F', {
      method: 'POST',
      headers: { ...apikey(key), 'content-type': 'application/json', 'x-tollgate-roles': 'admin' },
      body: '{"amount":1}',
    });
    expect(r.status).toBe(200);
    const seen = upstream.seen[before];
    expect(seen?.url).toBe('/base/score/42?explain=1&x=%2F');
    expect(seen?.body.toString()).toBe('{"amount":1}');
    expect(seen?.headers['authorization']).toBeUndefined();
    expect(seen?.headers['x-tollgate-key-id']).toBe(grant.id);
    // The caller's own X-Tollgate-* headers never reach the workload.
    expect(seen?.headers['x-tollgate-roles']).toBe(workflow);
    expect(r.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('refuses everything else with the central gateway’s codes, before the workload sees it', async () => {
    const before = upstream.seen.length;
    const none = await send(base, '/score');
    expect([none.status, none.json.code, none.headers['www-authenticate']]).toEqual([
      401,
      'missing_api_key',
      'Apikey',
    ]);
    const other = await createKey(rc, 'bda', [uniqueName('wf-other')]);
    const wrong = await send(base, '/score', { headers: apikey(other.key) });
    expect([wrong.status, wrong.json.code]).toEqual([403, 'workflow_not_allowed']);
    const platform = await createKey(rc, 'platform', ['editor']);
    const mismatch = await send(base, '/score', { headers: apikey(platform.key) });
    expect([mismatch.status, mismatch.json.code]).toEqual([403, 'module_mismatch']);
    const garbage = await send(base, '/score', { headers: { authorization: 'Apikey tgb_not-a-key' } });
    expect([garbage.status, garbage.json.code]).toEqual([401, 'malformed_api_key']);
    const own = await createKey(rc, 'bda', [workflow]);
    for (const sneaky of ['/a/..%2f..%2fadmin', '/a/%2e%2e/admin', '/a//b']) {
      const r = await send(base, sneaky, { headers: apikey(own.key) });
      expect(r.status).toBe(400);
    }
    expect(upstream.seen.length).toBe(before);
  });

  it('refuses a revoked key at once', async () => {
    const { key, grant, hash } = await createKey(rc, 'bda', [workflow]);
    expect((await send(base, '/score', { headers: apikey(key) })).status).toBe(200);
    await new KeyIndexWriter(rc, await testSealer()).delete({ hash, id: grant.id });
    const deadline = Date.now() + 1_000;
    let r = await send(base, '/score', { headers: apikey(key) });
    while (r.status === 200 && Date.now() < deadline)
      r = await send(base, '/score', { headers: apikey(key) });
    expect([r.status, r.json.code]).toEqual([401, 'unknown_api_key']);
  });

  it('serves health, readiness and metrics on its operations port only', async () => {
    expect((await send(opsBase, '/healthz')).status).toBe(200);
    expect((await send(opsBase, '/readyz')).status).toBe(200);
    const metrics = await send(opsBase, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(
      /tollgate_gateway_requests_total\{kind="bda",status="200",module="bda"\} \d+/,
    );
    // On the traffic port, /healthz is the workload's path like any other: it needs a key.
    expect((await send(base, '/healthz')).json.code).toBe('missing_api_key');
  });

  it('runs the workload’s own probes on its operations port, and refuses what it does not serve', async () => {
    const closed = await freePort();
    const probing = createSidecar(
      services,
      {
        kind: 'workflow',
        namespace: 'default',
        upstream: new URL(upstream.url),
        workflow,
        service: 'scorer',
      },
      {
        probes: {
          'web/readiness': {
            httpGet: { path: '/ready', port: upstream.port, httpHeaders: [] },
            timeoutSeconds: 1,
          },
          'web/liveness': { tcpSocket: { port: upstream.port }, timeoutSeconds: 1 },
          'web/startup': { tcpSocket: { port: closed }, timeoutSeconds: 1 },
          // Sent as the kubelet sends a path: escaped, dot segments resolved, on loopback whatever it says.
          'web/spaced': {
            httpGet: { path: '/a b/../ok', port: upstream.port, httpHeaders: [] },
            timeoutSeconds: 1,
          },
          'web/hostlike': {
            httpGet: { path: '//elsewhere.example/x', port: upstream.port, httpHeaders: [] },
            timeoutSeconds: 1,
          },
        },
      },
    );
    const server = probing.operations.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const probes = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const seen = upstream.seen.length;
      const ready = await send(probes, '/app-health/web/readiness');
      expect([ready.status, ready.json]).toEqual([200, { ready: true }]);
      // The original probe went to the workload, on its own path.
      expect(upstream.seen.slice(seen).map((r) => r.url)).toEqual(['/ready']);
      expect((await send(probes, '/app-health/web/liveness')).json).toEqual({ ready: true });
      expect((await send(probes, '/app-health/web/spaced')).json).toEqual({ ready: true });
      expect((await send(probes, '/app-health/web/hostlike')).json).toEqual({ ready: true });
      expect(upstream.seen.slice(-2).map((r) => r.url)).toEqual(['/ok', '//elsewhere.example/x']);
      const down = await send(probes, '/app-health/web/startup');
      expect([down.status, down.json]).toEqual([503, { ready: false }]);
      // Asks that come together share one probe of the workload: many asks, one call (a slow
      // workload, so that they do come together).
      const respond = upstream.respond;
      upstream.respond = (req, res, body) => void setTimeout(() => respond(req, res, body), 500);
      try {
        const before = upstream.seen.length;
        const asks = await Promise.all(
          Array.from({ length: 20 }, () => send(probes, '/app-health/web/readiness')),
        );
        expect(asks.map((a) => a.status)).toEqual(Array.from({ length: 20 }, () => 200));
        expect(upstream.seen.length - before).toBeLessThanOrEqual(2);
      } finally {
        upstream.respond = respond;
      }
      const unknown = await send(probes, '/app-health/web/other');
      expect([unknown.status, unknown.json.code]).toEqual([404, 'unknown_endpoint']);
      // Only GET (and HEAD) reads these; anything else is an endpoint the port does not have.
      const post = await send(probes, '/healthz', { method: 'POST' });
      expect([post.status, post.json.code]).toEqual([404, 'unknown_endpoint']);
      expect(post.json.error).toBe('no such endpoint: POST /healthz');
      expect((await send(probes, '/app-health/web')).json.code).toBe('unknown_endpoint');
      expect((await send(probes, '/healthz?verbose=1')).json).toEqual({ status: 'ok' });
      // As Express matched them: one trailing slash and letter case do not matter.
      expect((await send(probes, '/healthz/')).json).toEqual({ status: 'ok' });
      expect((await send(probes, '/READYZ')).json).toEqual({ status: 'ready' });
      expect((await send(probes, '/app-health/web/readiness/')).json).toEqual({ ready: true });
    } finally {
      server.close();
    }
  });

  it('fails closed when Redis is down: 503, never a pass, and not ready', async () => {
    const { key } = await createKey(rc, 'bda', [workflow]);
    await stopRedis(TAG);
    try {
      const deadline = Date.now() + 5_000;
      let r = await send(base, '/score', { headers: apikey(key) });
      while (r.status === 200 && Date.now() < deadline) {
        await new Promise((res) => setTimeout(res, 100));
        r = await send(base, '/score', { headers: apikey(key) });
      }
      expect([r.status, r.json.code]).toEqual([503, 'redis_unavailable']);
      expect((await send(opsBase, '/readyz')).status).toBe(503);
      // Once the outage is noticed, nothing passes unchecked.
      const after = upstream.seen.length;
      for (let i = 0; i < 5; i++) {
        expect((await send(base, '/score', { headers: apikey(key) })).status).toBe(503);
      }
      expect(upstream.seen.length).toBe(after);
    } finally {
      await restartRedis(TAG);
    }
  });
});

describe('central gateway and sidecar together: a signed grant instead of a second lookup', () => {
  let rc: Redis;
  let upstream: Upstream;
  let central: TestGateway;
  let services: GatewayServices;
  let sidecar: Sidecar;
  let sidecarUrl: string;
  let keyFile: string;
  let dir: string;
  const workflow = uniqueName('wf-grant');

  beforeAll(async () => {
    const r = await redis();
    rc = redisClient(r.url);
    upstream = await startUpstream();
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-grants-'));
    keyFile = TEST_SIGNING_KEY_FILE;
    central = await startGateway({ redisUrl: r.url });
    services = await sidecarServices(r.url);
    sidecar = createSidecar(services, {
      kind: 'workflow',
      namespace: 'default',
      upstream: new URL(upstream.url),
      workflow,
      service: 'scorer',
    });
    sidecarUrl = `http://127.0.0.1:${(await sidecar.traffic.listen(0, '127.0.0.1')).port}`;
    // The workflow service's route goes to its sidecar, as a pod's Service targets the sidecar.
    await putWorkflowRoute(rc, {
      workflow,
      service: 'scorer',
      url: sidecarUrl,
      owner: 'alice',
      sidecar: true,
    });
    // A service of the same workflow without a sidecar: its calls carry no grant.
    await registerService(rc, workflow, 'plain', upstream.url);
  });

  afterAll(async () => {
    await sidecar?.traffic.shutdown();
    await central?.stop();
    await upstream?.close();
    rc?.disconnect();
    await rm(dir, { recursive: true, force: true });
  });

  /** A grant as the central gateway signs it, with the same key, for tests of what is refused. */
  async function craft(
    claims: { aud?: string; exp?: number; iat?: number; jti?: string; htm?: string; htt?: string },
    file = keyFile,
  ): Promise<string> {
    const stored = JSON.parse(await readFile(file, 'utf8')) as JWK & { kid: string };
    const now = Math.floor(Date.now() / 1000);
    const call = { htm: claims.htm ?? 'GET', htt: claims.htt ?? '/score' };
    return new SignJWT({ kid: '0123456789abcdef0123', own: 'alice', mod: 'bda', roles: [workflow], ...call })
      .setProtectedHeader({ alg: 'ES256', kid: stored.kid, typ: 'tollgate-grant+jwt' })
      .setIssuer('urn:tollgate:gateway')
      .setAudience(claims.aud ?? `urn:tollgate:service:default/${workflow}/scorer`)
      .setJti(claims.jti ?? randomUUID())
      .setIssuedAt(claims.iat ?? now)
      .setExpirationTime(claims.exp ?? now + 10)
      .sign(await importJWK(stored, 'ES256'));
  }

  it('a call through the central gateway passes the sidecar on its grant, with no key lookup there', async () => {
    const { key, grant, hash } = await createKey(rc, 'bda', [workflow]);
    expect(
      (await send(central.url, `/events/bda/${workflow}/scorer/warm`, { headers: apikey(key) })).status,
    ).toBe(200);
    // The index entry vanishes without an announcement: the central gateway's cache still holds
    // the key, but a lookup in Redis would now fail. The sidecar must not look.
    await rc.del(`tg:key:${hash}`);
    const before = upstream.seen.length;
    const r = await send(central.url, `/events/bda/${workflow}/scorer/score?x=1`, {
      headers: { ...apikey(key), 'x-forwarded-host': 'evil.example.test', 'x-forwarded-for': '192.0.2.1' },
    });
    expect(r.status).toBe(200);
    const seen = upstream.seen[before];
    expect(seen?.url).toBe('/score?x=1');
    expect(seen?.headers['x-tollgate-key-id']).toBe(grant.id);
    // How the client came to the central gateway, as the central gateway said it (its grant is
    // verified); never what the client claimed.
    expect(seen?.headers['x-forwarded-host']).toBe(new URL(central.url).host);
    expect(seen?.headers['x-forwarded-for']).toBe('127.0.0.1, 127.0.0.1');
    // The workload never sees the grant (nor the key).
    expect(seen?.headers['x-tollgate-grant']).toBeUndefined();
    expect(seen?.headers['authorization']).toBeUndefined();
    // Without the grant, the sidecar checks the key in full, and Redis no longer knows it.
    const direct = await send(sidecarUrl, '/score', { headers: apikey(key) });
    expect([direct.status, direct.json.code]).toEqual([401, 'unknown_api_key']);
  });

  it('signs grants only for services behind a sidecar: other workloads never see one', async () => {
    const { key } = await createKey(rc, 'bda', [workflow]);
    const before = upstream.seen.length;
    expect(
      (await send(central.url, `/events/bda/${workflow}/plain/x`, { headers: apikey(key) })).status,
    ).toBe(200);
    expect(upstream.seen[before]?.url).toBe('/x');
    expect(upstream.seen[before]?.headers['x-tollgate-grant']).toBeUndefined();
  });

  it('a workflow that changed hands: keys its former owner made are refused at the gateway and at the sidecar', async () => {
    const { key } = await createKey(rc, 'bda', [workflow]);
    const viaGateway = (service: string) =>
      send(central.url, `/events/bda/${workflow}/${service}/x`, { headers: apikey(key) });
    expect((await viaGateway('scorer')).status).toBe(200);
    const handOver = async (owner: string) => {
      await putWorkflowRoute(rc, { workflow, service: 'scorer', url: sidecarUrl, owner, sidecar: true });
      await putWorkflowRoute(rc, { workflow, service: 'plain', url: upstream.url, owner });
    };
    await handOver('bob');
    try {
      const before = upstream.seen.length;
      let gateway = await viaGateway('scorer');
      for (let i = 0; gateway.status === 200 && i < 50; i++) {
        await sleep(20);
        gateway = await viaGateway('scorer');
      }
      expect([gateway.status, gateway.json.code]).toEqual([403, 'workflow_not_owned']);
      expect(gateway.json.error).toMatch(/belongs to another owner/);
      const plain = await viaGateway('plain');
      expect([plain.status, plain.json.code]).toEqual([403, 'workflow_not_owned']);
      const direct = await send(sidecarUrl, '/score', { headers: apikey(key) });
      expect([direct.status, direct.json.code]).toEqual([403, 'workflow_not_owned']);
      expect(upstream.seen.length).toBe(before);
      // Its new owner's keys pass, through the gateway and at the sidecar.
      const bobs = await createKey(rc, 'bda', [workflow], { owner: 'bob' });
      const ok = await send(central.url, `/events/bda/${workflow}/scorer/x`, { headers: apikey(bobs.key) });
      expect(ok.status).toBe(200);
      expect((await send(sidecarUrl, '/score', { headers: apikey(bobs.key) })).status).toBe(200);
    } finally {
      await handOver('alice');
    }
    let back = await viaGateway('scorer');
    for (let i = 0; back.status !== 200 && i < 50; i++) {
      await sleep(20);
      back = await viaGateway('scorer');
    }
    expect(back.status).toBe(200);
  });

  it('a refusal at the sidecar reaches the owner’s trail through a central gateway; forged reports do not', async () => {
    const trail = await mkdtemp(path.join(tmpdir(), 'tollgate-trail-'));
    // A central gateway that keeps the trail, on the sidecar's Redis: it takes the sidecar's reports.
    const collector = await startGateway({
      redisUrl: (await redis()).url,
      auditUri: pathToFileURL(trail).href,
    });
    try {
      const limited = await createKey(rc, 'bda', [workflow], {
        name: 'nightly scorer',
        rateLimit: { requests: 1, windowSeconds: 60 },
      });
      expect((await send(sidecarUrl, '/score', { headers: apikey(limited.key) })).status).toBe(200);
      for (let i = 0; i < 3; i++) {
        const refused = await send(sidecarUrl, '/score', { headers: apikey(limited.key) });
        expect(refused.status).toBe(429);
      }
      // What a team holding the sidecar's Redis password could append: a report about a key it has
      // never seen, one with fields the gateway never takes from a report, junk, a huge line.
      await rc.rpush(
        'tg:audit:sidecar',
        JSON.stringify({ h: 'f'.repeat(64), c: 'rate_limited', n: 1 }),
        JSON.stringify({ h: limited.hash, c: 'rate_limited', n: 1, owner: 'mallory', at: 'x' }),
        JSON.stringify({ h: limited.hash, c: 'rotate_key_at_evil_example', n: 1 }),
        JSON.stringify({ h: limited.hash, c: 'rate_limited', n: 1, a: '203.0.113.9' }),
        'not json',
        JSON.stringify({ h: limited.hash, c: 'x'.repeat(10_000), n: 1 }),
      );
      let items: Array<{
        keyId?: string;
        keyName?: string;
        detail?: Record<string, unknown>;
        owner: string;
      }> = [];
      for (let i = 0; i < 50 && items.length === 0; i++) {
        await sleep(50);
        await collector.services.audit.flush();
        items = (await collector.services.audit.query('alice', { limit: 50, keyId: limited.grant.id })).items;
      }
      // One event for the three refusals (once per key per minute).
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({
        keyId: limited.grant.id,
        keyName: 'nightly scorer',
        owner: 'alice',
        detail: { code: 'rate_limited', via: 'sidecar' },
      });
      expect(await rc.llen('tg:audit:sidecar')).toBe(0);
      // Nothing for mallory, and the collector is still up.
      expect((await collector.services.audit.query('mallory', { limit: 50 })).items).toEqual([]);
      expect((await fetch(`${collector.url}/healthz`)).status).toBe(200);
    } finally {
      await collector.stop();
      await rm(trail, { recursive: true, force: true });
    }
  });

  it('refuses forged, foreign, expired and replayed grants, whatever key comes with them', async () => {
    const before = upstream.seen.length;
    const call = (token: string, headers: Record<string, string> = {}) =>
      send(sidecarUrl, '/score', { headers: { 'x-tollgate-grant': token, ...headers } });
    const expectRefused = async (token: string, why: RegExp) => {
      const r = await call(token);
      expect([r.status, r.json.code]).toEqual([401, 'invalid_grant']);
      expect(r.json.error).toMatch(why);
    };
    await expectRefused('not-a-jwt', /signature or its shape/);
    // Signed with another key: a forgery.
    const other = path.join(dir, 'other-key.json');
    await GrantSigner.open(other);
    await expectRefused(await craft({}, other), /signature or its shape/);
    await expectRefused(
      await craft({ aud: `urn:tollgate:service:default/${workflow}/other` }),
      /another service/,
    );
    // The same workflow service in another namespace (a tenant's pod labelled as this one): not ours.
    await expectRefused(
      await craft({ aud: `urn:tollgate:service:team-b/${workflow}/scorer` }),
      /another service/,
    );
    await expectRefused(await craft({ exp: Math.floor(Date.now() / 1000) - 60 }), /expired/);
    // Issued by a gateway whose clock is ahead, or made to live longer than grants do (expired by
    // its age): a replay could outlive the claim that refuses it.
    const now = Math.floor(Date.now() / 1000);
    await expectRefused(await craft({ iat: now + 6, exp: now + 16 }), /issued in the future or too long ago/);
    await expectRefused(await craft({ iat: now - 30, exp: now + 30 }), /expired/);
    // A grant is for one call: another method or path is refused.
    await expectRefused(await craft({ htm: 'POST' }), /another call/);
    await expectRefused(await craft({ htt: '/admin' }), /another call/);
    await expectRefused(await craft({ htt: '/score?x=1' }), /another call/);
    // A valid grant passes once; its replay is refused, here and at every other replica.
    const once = await craft({});
    expect((await call(once)).status).toBe(200);
    await expectRefused(once, /used already/);
    const replica = createSidecar(services, {
      kind: 'workflow',
      namespace: 'default',
      upstream: new URL(upstream.url),
      workflow,
      service: 'scorer',
    });
    const replicaUrl = `http://127.0.0.1:${(await replica.traffic.listen(0, '127.0.0.1')).port}`;
    try {
      const r = await send(replicaUrl, '/score', { headers: { 'x-tollgate-grant': once } });
      expect([r.status, r.json.code]).toEqual([401, 'invalid_grant']);
      expect(r.json.error).toMatch(/used already/);
    } finally {
      await replica.traffic.shutdown();
    }
    // A sidecar guarding the same ids in another namespace refuses a grant this namespace's takes.
    const elsewhere = createSidecar(services, {
      kind: 'workflow',
      namespace: 'team-b',
      upstream: new URL(upstream.url),
      workflow,
      service: 'scorer',
    });
    const elsewhereUrl = `http://127.0.0.1:${(await elsewhere.traffic.listen(0, '127.0.0.1')).port}`;
    try {
      const r = await send(elsewhereUrl, '/score', { headers: { 'x-tollgate-grant': await craft({}) } });
      expect([r.status, r.json.code]).toEqual([401, 'invalid_grant']);
      expect(r.json.error).toMatch(/another service/);
    } finally {
      await elsewhere.traffic.shutdown();
    }
    // A good key does not rescue a bad grant: a grant that fails is never taken for a missing one.
    const { key } = await createKey(rc, 'bda', [workflow]);
    const withKey = await call('forged', apikey(key));
    expect([withKey.status, withKey.json.code]).toEqual([401, 'invalid_grant']);
    expect(upstream.seen.length).toBe(before + 1);
  });
});

describe('tollgate sidecar (the command)', () => {
  let proc: ChildProcess | undefined;
  afterEach(() => {
    if (proc?.exitCode === null) proc.kill('SIGKILL');
  });

  /**
   * What the image runs (bin/tollgate.js sends `sidecar` to its bundle, dist/sidecar/), with the
   * environment the webhook gives an injected sidecar: the public keys only, its heap settings.
   * Resolves once its operations port says ready.
   */
  async function spawnSidecar(
    flags: string[],
    env: Record<string, string> = {},
  ): Promise<ChildProcess & { opsPort: number }> {
    const opsPort = await freePort();
    const child = spawn(
      process.execPath,
      [BIN, 'sidecar', '--host', '127.0.0.1', '--operations-port', String(opsPort), ...flags],
      {
        stdio: 'ignore',
        env: {
          ...process.env,
          NODE_OPTIONS: SIDECAR_NODE_OPTIONS,
          TOLLGATE_TRUSTED_KEYS: TEST_TRUSTED_KEYS,
          ...env,
        },
      },
    );
    proc = child;
    const deadline = Date.now() + 30_000;
    while ((await send(`http://127.0.0.1:${opsPort}`, '/readyz').catch(() => undefined))?.status !== 200) {
      if (Date.now() > deadline) throw new Error(`tollgate sidecar ${flags.join(' ')} did not become ready`);
      await new Promise((res) => setTimeout(res, 200));
    }
    return Object.assign(child, { opsPort });
  }

  it('refuses bad flags with what to fix', async () => {
    const fails = (args: string[]) =>
      run(process.execPath, [TSX, CLI, 'sidecar', ...args]).then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
    const base = ['--upstream', 'http://127.0.0.1:9', '--workflow', 'wf', '--service', 'svc'];
    const bad = await fails([...base.slice(0, 4), '--service', 'a:b']);
    expect(bad?.code).toBe(2);
    expect(bad?.stderr).toContain("--service: 1 to 63 letters, digits, '-', '_' or '.'");
    const url = await fails(['--upstream', 'file:///etc', ...base.slice(2)]);
    expect(url?.stderr).toContain('--upstream must be an http:// or https:// URL');
    expect((await fails(base.slice(2)))?.stderr).toContain("required option '--upstream <url>'");
  });

  it('guards a model’s runtime from its bundle too: V2 calls reach the runtime, over REST and over gRPC', async () => {
    const r = await redis();
    const rc = redisClient(r.url);
    const runtime = await startUpstream();
    const model = uniqueName('model-bundle');
    runtime.respond = (req, res) => {
      const ready = req.url === `/v2/models/${model}/ready`;
      res.writeHead(ready ? 200 : 404, { 'content-type': 'application/json' });
      res.end(ready ? '{}' : '{"error":"no such path"}');
    };
    let grpc: InferenceClient | undefined;
    const firsts: InferenceClient[] = [];
    try {
      const { key } = await createKey(rc, 'platform', ['models:inference']);
      const [port, grpcPort] = [await freePort(), await freePort()];
      const sidecar = await spawnSidecar([
        '--upstream',
        runtime.url,
        '--model',
        model,
        '--port',
        String(port),
        '--grpc-port',
        String(grpcPort),
        '--redis-url',
        r.url,
      ]);
      const rest = await send(`http://127.0.0.1:${port}`, `/v2/models/${model}/ready`, {
        headers: apikey(key),
      });
      expect(rest.status).toBe(200);
      expect(runtime.seen.at(-1)?.url).toBe(`/v2/models/${model}/ready`);
      // gRPC's libraries load with the port's first connection: connections that arrive while they
      // load are all served.
      firsts.push(...Array.from({ length: 4 }, () => new InferenceClient(`127.0.0.1:${grpcPort}`)));
      const lives = await Promise.all(firsts.map((c) => c.call('ServerLive', {}, {})));
      expect(lives.map((l) => l.value)).toEqual(Array.from({ length: 4 }, () => ({ live: true })));
      grpc = new InferenceClient(`127.0.0.1:${grpcPort}`);
      const before = runtime.seen.length;
      const ready = await grpc.call('ModelReady', { name: model }, { authorization: `Apikey ${key}` });
      expect(ready.value).toEqual({ ready: true });
      expect(runtime.seen.length).toBe(before + 1);
      expect(refusal(await grpc.call('ModelReady', { name: model }, {}))).toEqual([
        16,
        'missing_api_key',
        'missing_api_key',
      ]);
      // Its gRPC connections still open, it stops cleanly and at once.
      const exited = new Promise((res) => sidecar.once('exit', res));
      sidecar.kill('SIGTERM');
      await exited;
      expect(sidecar.exitCode).toBe(0);
    } finally {
      for (const c of firsts) c.close();
      grpc?.close();
      await runtime.close();
      rc.disconnect();
    }
  });

  it('guards a local process as a pod runs it (its bundle, its heap settings): its workflow’s key passes, no key does not', async () => {
    const r = await redis();
    const rc = redisClient(r.url);
    const upstream = await startUpstream();
    try {
      const workflow = uniqueName('wf-cli');
      const { key } = await createKey(rc, 'bda', [workflow]);
      const port = await freePort();
      const sidecar = await spawnSidecar(
        [
          '--upstream',
          upstream.url,
          '--workflow',
          workflow,
          '--service',
          'svc',
          '--port',
          String(port),
          '--redis-url',
          r.url,
        ],
        {
          [APP_PROBES_ENV]: JSON.stringify({
            'app/readiness': { httpGet: { path: '/probe', port: upstream.port } },
          }),
        },
      );
      const base = `http://127.0.0.1:${port}`;
      expect((await send(base, '/hello', { headers: apikey(key) })).status).toBe(200);
      expect(upstream.seen.at(-1)?.url).toBe('/hello');
      expect((await send(base, '/hello')).status).toBe(401);
      // The workload's probe, run by the bundled sidecar on its operations port.
      const probe = await send(`http://127.0.0.1:${sidecar.opsPort}`, '/app-health/app/readiness');
      expect([probe.status, probe.json]).toEqual([200, { ready: true }]);
      expect(upstream.seen.at(-1)?.url).toBe('/probe');
      const exited = new Promise((res) => sidecar.once('exit', res));
      sidecar.kill('SIGTERM');
      await exited;
      expect(sidecar.exitCode).toBe(0);
    } finally {
      await upstream.close();
      rc.disconnect();
    }
  });
});
