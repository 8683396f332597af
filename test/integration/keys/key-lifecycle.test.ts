// Keys beyond create and delete, on real processes: `tollgate dev` (management API, operator, audit
// trail in its state directory) and a second `tollgate gateway` process on the same Redis, as two
// replicas would be. Rotation with a grace period honoured by both, the per-key network allowlist,
// usage over time, and the audit trail surviving a Redis flush and a restart.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, redis } from '../../harness/index.js';
import { spawnGateway, type GatewayProcess } from '../gateway/process.js';
import { startUpstream, type Upstream } from '../gateway/support.js';
import { removeTempDirs, tempDir } from './fixtures.js';
import { scanningService } from './scanner.js';
import { WebhookReceiver } from './webhook-receiver.js';
import { hashKey } from '../../../common/apikey/format.js';
import { redisKeys } from '../../../common/redis/schema.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..', '..');
const BIN = join(ROOT, 'bin', 'tollgate.js');

interface Json {
  status: number;
  body: Record<string, unknown>;
  /** The Tollgate-Audit answer header: whether the action's audit event was stored first. */
  audit: string | null;
}

let stateDir: string;
let redisUrl: string;
let client: Redis;
let upstream: Upstream;
let dev: ChildProcess | undefined;
let devLog = '';
let devUrl: string;
let devPort: number;
let replica: GatewayProcess;
/** The second replica trusts one proxy in front of it (X-Forwarded-For's last entry). */
let behindProxy: GatewayProcess;
/** Trusts one proxy, but only from a network the test's calls do not come from. */
let directCaller: GatewayProcess;
let alice: string;
let bob: string;
let scanner: Awaited<ReturnType<typeof scanningService>>;

const auditUri = () => pathToFileURL(join(stateDir, 'audit')).href;

function sharedEnv(): Record<string, string> {
  return {
    NODE_OPTIONS: '',
    TOLLGATE_REDIS_URL: redisUrl,
    TOLLGATE_UPSTREAMS: `datasets=${upstream.url},reports=${upstream.url}`,
    // A report costs 3 credits of a key that has them; datasets the 1 any call costs.
    TOLLGATE_CREDIT_COSTS: 'reports=3',
    TOLLGATE_AUDIT_URI: auditUri(),
    TOLLGATE_AUDIT_FLUSH_MS: '200',
    TOLLGATE_MAX_ROLL_GRACE_SECONDS: '600',
    TOLLGATE_ADMIN_GROUPS: 'platform-ops',
    TOLLGATE_LEAK_REPORT_KEYS_URL: scanner.keysUrl,
    // Replicas share the signing key: the entries `tollgate dev` seals are the ones they believe.
    TOLLGATE_GRANT_SIGNING_KEY_FILE: join(stateDir, 'grant-signing-key.json'),
    // Webhooks reach the test's receivers on loopback, over http, and retry within a second.
    TOLLGATE_WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    TOLLGATE_WEBHOOK_ALLOW_HTTP: 'true',
    TOLLGATE_WEBHOOK_RETRY_SECONDS: '0.3,0.3,0.3',
    TOLLGATE_WEBHOOK_POLL_MS: '100',
    TOLLGATE_WEBHOOK_EXPIRING_SCAN_MS: '300',
    LOG_LEVEL: 'warn',
  };
}

async function startDev(): Promise<void> {
  dev = spawn(
    process.execPath,
    [BIN, 'dev', '--port', String(devPort), '--state-dir', stateDir, '--redis-url', redisUrl],
    {
      env: { ...process.env, ...sharedEnv() },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const keep = (c: Buffer): void => void (devLog = (devLog + c.toString()).slice(-20_000));
  dev.stdout?.on('data', keep);
  dev.stderr?.on('data', keep);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (dev.exitCode !== null) throw new Error(`tollgate dev exited at start:\n${devLog}`);
    try {
      if ((await fetch(`${devUrl}/readyz`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`tollgate dev did not start in 30 s:\n${devLog}`);
    await sleep(100);
  }
}

async function stopDev(): Promise<void> {
  if (dev === undefined || dev.exitCode !== null) return;
  const exited = new Promise((r) => dev?.once('exit', r));
  dev.kill('SIGTERM');
  await exited;
}

async function token(user: string, group?: string): Promise<string> {
  const groups = group === undefined ? [] : ['--group', group];
  const { stdout } = await run(
    process.execPath,
    [BIN, 'token', '--user', user, '--state-dir', stateDir, ...groups],
    { env: { ...process.env, NODE_OPTIONS: '' } },
  );
  return stdout.trim();
}

async function api(
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; raw?: string; contentType?: string } = {},
): Promise<Json> {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token ?? alice}` };
  let body: string | undefined;
  if (opts.body !== undefined || opts.raw !== undefined) {
    body = opts.raw ?? JSON.stringify(opts.body);
    headers['content-type'] = opts.contentType ?? 'application/json';
  }
  const res = await fetch(`${devUrl}/api/v1${path}`, { method, headers, body });
  const text = await res.text();
  return {
    status: res.status,
    body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
    audit: res.headers.get('tollgate-audit'),
  };
}

async function newKey(extra: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
  const r = await api('POST', '/apikeys', { body: { module: 'platform', roles: ['viewer'], ...extra } });
  expect(r.status).toBe(201);
  return { id: r.body['id'] as string, key: r.body['key'] as string };
}

/** A GET of the datasets resource with `key` through `base`; the status and the error code. */
async function use(
  base: string,
  key: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; code?: string; message?: string }> {
  const res = await fetch(`${base}/events/platform/api/v1/datasets`, {
    headers: { authorization: `Apikey ${key}`, ...headers },
  });
  const body = (await res.json()) as { code?: string; error?: string };
  return { status: res.status, ...(res.ok ? {} : { code: body.code, message: body.error }) };
}

async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

beforeAll(async () => {
  stateDir = await tempDir('tollgate-lifecycle-');
  redisUrl = (await redis('key-lifecycle')).url;
  client = new Redis(redisUrl);
  upstream = await startUpstream();
  scanner = await scanningService();
  devPort = await freePort();
  devUrl = `http://127.0.0.1:${devPort}`;
  await startDev();
  replica = await spawnGateway(sharedEnv());
  // The test's own calls come from loopback, which stands for the ingress controller here.
  behindProxy = await spawnGateway({
    ...sharedEnv(),
    TOLLGATE_TRUSTED_PROXIES: '1',
    TOLLGATE_TRUSTED_PROXY_CIDRS: '127.0.0.0/8',
  });
  // Trusts a proxy network the test's calls do not come from: they are direct callers.
  directCaller = await spawnGateway({
    ...sharedEnv(),
    TOLLGATE_TRUSTED_PROXIES: '1',
    TOLLGATE_TRUSTED_PROXY_CIDRS: '192.0.2.0/24',
  });
  alice = await token('alice@example.com');
  bob = await token('bob@example.com');
}, 120_000);

afterAll(async () => {
  await stopDev();
  for (const g of [replica, behindProxy, directCaller]) g?.child.kill('SIGKILL');
  client?.disconnect();
  await upstream?.close();
  await scanner?.close();
  await removeTempDirs();
});

describe('rolling a key', () => {
  it('returns a new key with the same grant; the old one works on every replica until its grace ends', async () => {
    const old = await newKey({ name: 'ci deploy', rateLimit: { requests: 1000, windowSeconds: 60 } });
    for (const base of [devUrl, replica.url]) expect((await use(base, old.key)).status).toBe(200);

    // Long enough for the checks below to run inside it on a machine another test worker keeps busy.
    const rolled = await api('POST', `/apikeys/${old.id}/roll`, { body: { gracePeriodSeconds: 10 } });
    expect(rolled.status).toBe(201);
    const fresh = rolled.body as {
      id: string;
      key: string;
      name: string;
      roles: string[];
      rolledFrom: string;
      rateLimit: unknown;
      rolled: { rolled: { to: string; at: string; graceEndsAt: string } };
    };
    expect(fresh.key).toMatch(/^tgp_/);
    expect(fresh.key).not.toBe(old.key);
    expect(fresh).toMatchObject({
      name: 'ci deploy',
      roles: ['viewer'],
      rolledFrom: old.id,
      rateLimit: { requests: 1000, windowSeconds: 60 },
    });
    expect(fresh.rolled.rolled.to).toBe(fresh.id);
    const graceEnds = Date.parse(fresh.rolled.rolled.graceEndsAt);
    // The grace asked for, from the roll on: the old key's end is written, not guessed.
    expect(graceEnds - Date.parse(fresh.rolled.rolled.at)).toBe(10_000);

    // During the grace period both keys work, on both replicas.
    for (const base of [devUrl, replica.url]) {
      expect((await use(base, old.key)).status).toBe(200);
      expect((await use(base, fresh.key)).status).toBe(200);
    }
    // The list shows both, linked, with the old one's end.
    const list = await api('GET', '/apikeys');
    const items = list.body['items'] as Array<{
      id: string;
      state: string;
      rolled?: { to: string; graceEndsAt: string };
      rolledFrom?: string;
    }>;
    expect(items.find((k) => k.id === old.id)).toMatchObject({
      state: 'rolled',
      rolled: { to: fresh.id, graceEndsAt: fresh.rolled.rolled.graceEndsAt },
    });
    expect(items.find((k) => k.id === fresh.id)).toMatchObject({ state: 'active', rolledFrom: old.id });

    await sleep(Math.max(0, graceEnds - Date.now()) + 100);
    for (const base of [devUrl, replica.url]) {
      const refused = await use(base, old.key);
      expect(refused).toMatchObject({ status: 401, code: 'rolled_api_key' });
      expect(refused.message).toContain(fresh.id);
      expect((await use(base, fresh.key)).status).toBe(200);
    }
    const after = await api('GET', `/apikeys/${old.id}`);
    expect(after.body['state']).toBe('expired');
  });

  it('with a grace of 0 stops the old key at once on every replica, cached or not', async () => {
    const old = await newKey();
    // Both replicas have the key cached now.
    for (const base of [devUrl, replica.url]) expect((await use(base, old.key)).status).toBe(200);
    const rolled = await api('POST', `/apikeys/${old.id}/roll`, { body: { gracePeriodSeconds: 0 } });
    expect(rolled.status).toBe(201);
    for (const base of [devUrl, replica.url]) {
      await eventually(
        'old key refused',
        async () => ((await use(base, old.key)).code === 'rolled_api_key' ? true : undefined),
        2_000,
      );
      expect((await use(base, rolled.body['key'] as string)).status).toBe(200);
    }
  });

  it('without a body keeps the old key a day (capped by the gateway setting)', async () => {
    const old = await newKey();
    const res = await fetch(`${devUrl}/api/v1/apikeys/${old.id}/roll`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}` },
    });
    const body = (await res.json()) as { rolled: { rolled: { at: string; graceEndsAt: string } } };
    expect({ status: res.status, body }).toMatchObject({ status: 201 });
    // The gateway allows at most 600 s here (TOLLGATE_MAX_ROLL_GRACE_SECONDS).
    expect(Date.parse(body.rolled.rolled.graceEndsAt) - Date.parse(body.rolled.rolled.at)).toBe(600_000);
    expect((await use(replica.url, old.key)).status).toBe(200);
  });

  it('refuses what it cannot do, saying why', async () => {
    const old = await newKey();
    const cases: Array<[string, Parameters<typeof api>[2], number, string]> = [
      ['too long a grace', { body: { gracePeriodSeconds: 601 } }, 400, 'invalid_field'],
      ['a negative grace', { body: { gracePeriodSeconds: -1 } }, 400, 'invalid_field'],
      ['a fractional grace', { body: { gracePeriodSeconds: 1.5 } }, 400, 'invalid_field'],
      ['a grace as text', { body: { gracePeriodSeconds: '60' } }, 400, 'invalid_field'],
      ['an unknown field', { body: { grace: 60 } }, 400, 'unknown_field'],
      [
        'not JSON',
        { raw: 'grace=60', contentType: 'application/x-www-form-urlencoded' },
        415,
        'unsupported_media_type',
      ],
      [
        'broken JSON',
        { raw: '{"gracePeriodSeconds":', contentType: 'application/json' },
        400,
        'invalid_json',
      ],
    ];
    for (const [what, opts, status, code] of cases) {
      const r = await api('POST', `/apikeys/${old.id}/roll`, opts);
      expect({ what, status: r.status, code: r.body['code'] }).toEqual({ what, status, code });
      expect(typeof r.body['error']).toBe('string');
    }
    // None of those rolled it: it rolls once now, and never twice.
    expect((await api('POST', `/apikeys/${old.id}/roll`, { body: { gracePeriodSeconds: 60 } })).status).toBe(
      201,
    );
    const again = await api('POST', `/apikeys/${old.id}/roll`, { body: { gracePeriodSeconds: 60 } });
    expect(again).toMatchObject({ status: 409, body: { code: 'key_already_rolled' } });
    // Another user's key is not found, exactly like a key that does not exist.
    expect((await api('POST', `/apikeys/${old.id}/roll`, { token: bob, body: {} })).body['code']).toBe(
      'key_not_found',
    );
    expect((await api('POST', `/apikeys/0123456789abcdef0123/roll`, { body: {} })).status).toBe(404);
    expect((await api('POST', `/apikeys/not-an-id/roll`, { body: {} })).status).toBe(400);
    expect((await api('GET', `/apikeys/${old.id}/roll`)).status).toBe(405);
  });

  it('refuses to roll an expired key', async () => {
    const k = await newKey({ expiresAt: new Date(Date.now() + 1_500).toISOString() });
    await sleep(1_600);
    const r = await api('POST', `/apikeys/${k.id}/roll`, { body: {} });
    expect(r).toMatchObject({ status: 409, body: { code: 'key_expired' } });
  });

  it('two concurrent rolls of one key: one wins, the other is refused and leaves no key behind', async () => {
    const old = await newKey();
    const before = ((await api('GET', '/apikeys?limit=200')).body['items'] as unknown[]).length;
    const [a, b] = await Promise.all([
      api('POST', `/apikeys/${old.id}/roll`, { body: { gracePeriodSeconds: 5 } }),
      api('POST', `/apikeys/${old.id}/roll`, { body: { gracePeriodSeconds: 5 } }),
    ]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    const loser = a.status === 409 ? a : b;
    expect(['key_changed', 'key_already_rolled']).toContain(loser.body['code']);
    const after = ((await api('GET', '/apikeys?limit=200')).body['items'] as unknown[]).length;
    expect(after).toBe(before + 1);
  });
});

describe('a key limited to networks', () => {
  it('is refused from elsewhere with 403 address_not_allowed, on every replica', async () => {
    const k = await newKey({ allowedCidrs: ['10.0.0.0/8', '2001:db8::/32'] });
    for (const base of [devUrl, replica.url]) {
      const r = await use(base, k.key);
      expect(r).toMatchObject({ status: 403, code: 'address_not_allowed' });
      expect(r.message).toContain('127.0.0.1');
      // The owner's networks are not told to the caller.
      expect(r.message).not.toContain('10.0.0.0');
    }
    const local = await newKey({ allowedCidrs: ['127.0.0.0/8'] });
    for (const base of [devUrl, replica.url]) expect((await use(base, local.key)).status).toBe(200);
    expect((await api('GET', `/apikeys/${local.id}`)).body['allowedCidrs']).toEqual(['127.0.0.0/8']);
  });

  it('takes the client address from X-Forwarded-For only as far as proxies are trusted', async () => {
    const k = await newKey({ allowedCidrs: ['10.0.0.0/8'] });
    const forwarded = { 'x-forwarded-for': '10.1.2.3' };
    // One trusted proxy: the last entry is the client.
    expect((await use(behindProxy.url, k.key, forwarded)).status).toBe(200);
    // A client cannot forge its way in by adding entries on the left.
    expect((await use(behindProxy.url, k.key, { 'x-forwarded-for': '10.1.2.3, 192.0.2.7' })).status).toBe(
      403,
    );
    // No trusted proxy: the header is the client's word and proves nothing.
    expect((await use(devUrl, k.key, forwarded)).status).toBe(403);
    // A caller that is not one of the trusted proxies (a pod calling the Service directly) cannot
    // name its own address either.
    const direct = await use(directCaller.url, k.key, forwarded);
    expect(direct).toMatchObject({ status: 403, code: 'address_not_allowed' });
    expect(direct.message).toContain('127.0.0.1');
  });

  it('admits an IPv4 client through no IPv6 range, however wide', async () => {
    const v6 = await newKey({ allowedCidrs: ['::/0'] });
    expect(await use(replica.url, v6.key)).toMatchObject({ status: 403, code: 'address_not_allowed' });
    const mapped = await newKey({ allowedCidrs: ['::ffff:127.0.0.0/104'] });
    expect((await use(replica.url, mapped.key)).status).toBe(200);
  });

  it('refuses networks that are not CIDRs, saying which', async () => {
    const cases: unknown[] = [
      ['10.0.0.0'],
      ['10.0.0.0/33'],
      ['example.com/8'],
      [],
      ['10.0.0.0/8', '10.0.0.0/8'],
      '10.0.0.0/8',
      [42],
    ];
    for (const allowedCidrs of cases) {
      const r = await api('POST', '/apikeys', {
        body: { module: 'platform', roles: ['viewer'], allowedCidrs },
      });
      expect({ allowedCidrs, status: r.status, code: r.body['code'], field: r.body['field'] }).toEqual({
        allowedCidrs,
        status: 400,
        code: 'invalid_field',
        field: 'allowedCidrs',
      });
    }
  });
});

describe('usage over time', () => {
  it('counts requests and refusals per minute and per hour, and the busiest endpoints', async () => {
    const k = await newKey({ rateLimit: { requests: 5, windowSeconds: 60 } });
    for (let i = 0; i < 5; i++) expect((await use(replica.url, k.key)).status).toBe(200);
    // Refused although the key exists: rate-limited (twice) and a method its role does not allow.
    for (let i = 0; i < 2; i++) expect((await use(replica.url, k.key)).status).toBe(429);
    const denied = await fetch(`${replica.url}/events/platform/api/v1/datasets`, {
      method: 'POST',
      headers: { authorization: `Apikey ${k.key}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(denied.status).toBe(403);

    const usage = await eventually('usage flushed', async () => {
      const r = await api('GET', `/apikeys/${k.id}/usage`);
      return r.body['requestCount'] === 5 && r.body['refusalCount'] === 3 ? r.body : undefined;
    });
    const perMinute = usage['perMinute'] as Array<{ at: string; requests: number; refusals: number }>;
    const perHour = usage['perHour'] as Array<{ at: string; requests: number; refusals: number }>;
    expect(perMinute).toHaveLength(1_440);
    expect(perHour).toHaveLength(720);
    const sum = (points: typeof perMinute, f: 'requests' | 'refusals') =>
      points.reduce((n, p) => n + p[f], 0);
    expect([sum(perMinute, 'requests'), sum(perMinute, 'refusals')]).toEqual([5, 3]);
    expect([sum(perHour, 'requests'), sum(perHour, 'refusals')]).toEqual([5, 3]);
    // Oldest first, a minute apart, the last one the current minute.
    expect(Date.parse(perMinute[1]!.at) - Date.parse(perMinute[0]!.at)).toBe(60_000);
    expect(Date.now() - Date.parse(perMinute.at(-1)!.at)).toBeLessThan(120_000);
    expect(usage['topEndpoints']).toEqual([
      { endpoint: 'GET /events/platform/api/v1/datasets', requests: 5 },
    ]);
    expect(typeof usage['lastUsed']).toBe('string');
    // The key carries the totals too, and the list each key's last 24 hours.
    const listed = await api('GET', `/apikeys/${k.id}`);
    expect(listed.body).toMatchObject({ requestCount: 5, refusalCount: 3 });
    const row = (
      (await api('GET', '/apikeys?limit=200')).body['items'] as Array<{
        id: string;
        requestsPerHour: number[];
      }>
    ).find((i) => i.id === k.id);
    expect(row?.requestsPerHour).toHaveLength(24);
    expect(row?.requestsPerHour.reduce((n, v) => n + v, 0)).toBe(5);
    // Another user's key is not found.
    expect((await api('GET', `/apikeys/${k.id}/usage`, { token: bob })).status).toBe(404);
  });
});

describe('standalone state', () => {
  it('routes and keys are manifests first: a Redis flush loses neither', async () => {
    const workflow = 'wf-survivor';
    const { stdout } = await run(
      process.execPath,
      [
        BIN,
        'route',
        'add',
        '--workflow',
        workflow,
        '--service',
        'api',
        '--url',
        upstream.url,
        '--owner',
        'alice@example.com',
        '--state-dir',
        stateDir,
      ],
      { env: { ...process.env, NODE_OPTIONS: '' } },
    );
    expect(stdout).toMatch(/^routed \/events\/bda\/wf-survivor\/api\//);
    const created = await eventually('the workflow offered', async () => {
      const r = await api('POST', '/apikeys', { body: { module: 'bda', roles: [workflow] } });
      return r.status === 201 ? r.body : undefined;
    });
    const call = async () =>
      (
        await fetch(`${replica.url}/events/bda/${workflow}/api/ping`, {
          headers: { authorization: `Apikey ${created['key'] as string}` },
        })
      ).status;
    expect(await call()).toBe(200);
    await client.flushall();
    // The operator notices the empty Redis and rebuilds the key index and the routes from the
    // manifests; nothing is restarted.
    await eventually(
      'the call through the rebuilt route',
      async () => ((await call()) === 200 ? true : undefined),
      15_000,
    );
  });
});

describe('identities', () => {
  it('share credits and limits across their keys on every replica, through rolls; administrators change and top them up', async () => {
    const name = `acme-${Math.random().toString(36).slice(2, 8)}`;
    const made = await api('POST', '/identities', {
      body: { name, displayName: 'ACME Corp.', credits: { amount: 30 } },
    });
    expect(made).toMatchObject({
      status: 201,
      audit: 'stored',
      body: { name, displayName: 'ACME Corp.', keys: 0, credits: { amount: 30, spent: 0, remaining: 30 } },
    });
    const again = await api('POST', '/identities', { body: { name } });
    expect([again.status, again.body['code']]).toEqual([409, 'identity_exists']);
    const badName = await api('POST', '/identities', { body: { name: 'ACME Corp' } });
    expect([badName.status, badName.body['code'], badName.body['field']]).toEqual([
      400,
      'invalid_field',
      'name',
    ]);
    // Another user can neither see it nor add keys to it: it is "not found", as if it did not exist.
    const bobsKey = await api('POST', '/apikeys', {
      token: bob,
      body: { module: 'platform', roles: ['viewer'], identity: name },
    });
    expect([bobsKey.status, bobsKey.body['code'], bobsKey.body['field']]).toEqual([
      404,
      'identity_not_found',
      'identity',
    ]);
    expect((await api('GET', `/identities/${name}`, { token: bob })).status).toBe(404);
    expect((await api('GET', '/identities', { token: bob })).body['items']).toEqual([]);

    const k1 = await newKey({ identity: name });
    // A key's own credits and its identity's are both spent; the scarcer one decides.
    const k2 = await newKey({ identity: name, credits: { amount: 1000 } });
    const bases = [devUrl, replica.url, behindProxy.url, directCaller.url];
    const seenBefore = upstream.seen.length;
    const results = await Promise.all(
      Array.from({ length: 90 }, (_, i) => use(bases[i % 4]!, i % 2 === 0 ? k1.key : k2.key)),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(30);
    expect(upstream.seen.length - seenBefore).toBe(30);
    const refused = results.filter((r) => r.status !== 200);
    expect(new Set(refused.map((r) => `${r.status} ${r.code}`))).toEqual(new Set(['429 credits_exhausted']));
    expect(refused[0]?.message).toBe(
      `the identity "${name}"'s 30 credits are spent; an administrator can add more`,
    );
    const k2Admitted = results.filter((r, i) => i % 2 === 1 && r.status === 200).length;
    const usage = await api('GET', `/apikeys/${k2.id}/usage`);
    // The key's own credits were given back for each call its identity refused.
    expect(usage.body['credits']).toEqual({ amount: 1000, spent: k2Admitted, remaining: 1000 - k2Admitted });
    expect(usage.body['identityCredits']).toEqual({ amount: 30, spent: 30, remaining: 0 });
    expect((await api('GET', `/identities/${name}`)).body).toMatchObject({
      keys: 2,
      credits: { remaining: 0 },
    });

    // Rolling keeps the identity: the new key is held to the same spent credits.
    const rolled = await api('POST', `/apikeys/${k1.id}/roll`, { body: { gracePeriodSeconds: 60 } });
    expect([rolled.status, rolled.body['identity']]).toEqual([201, name]);
    const rolledUse = await use(replica.url, rolled.body['key'] as string);
    expect([rolledUse.status, rolledUse.code]).toEqual([429, 'credits_exhausted']);

    const admin = await token('root@example.com', 'platform-ops');
    const notAdmin = await api('POST', `/admin/identities/${name}/credits`, { body: { add: 2 } });
    expect([notAdmin.status, notAdmin.body['code']]).toEqual([403, 'admin_required']);
    const topped = await api('POST', `/admin/identities/${name}/credits`, { token: admin, body: { add: 2 } });
    expect(topped).toMatchObject({ status: 200, audit: 'stored', body: { remaining: 2 } });
    const afterTopUp = [];
    for (const base of [replica.url, directCaller.url, devUrl])
      afterTopUp.push((await use(base, k2.key)).status);
    expect(afterTopUp).toEqual([200, 200, 429]);

    // An administrator replaces the credits by a named limit: every replica holds both keys to it at once.
    const set = await api('PUT', `/admin/identities/${name}/limits`, {
      token: admin,
      body: { credits: null, limits: [{ name: 'per-day', requests: 3, windowSeconds: 86_400 }] },
    });
    expect(set).toMatchObject({
      status: 200,
      audit: 'stored',
      body: { name, keys: 3, limits: [{ name: 'per-day', requests: 3, windowSeconds: 86_400 }] },
    });
    expect(set.body['credits']).toBeUndefined();
    const limited = [];
    for (const [base, key] of [
      [replica.url, k2.key],
      [directCaller.url, rolled.body['key'] as string],
      [devUrl, k2.key],
      [replica.url, k1.key],
    ] as const)
      limited.push(await use(base, key));
    expect(limited.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(limited[3]).toMatchObject({
      code: 'rate_limited',
      message: expect.stringMatching(
        new RegExp(`^this key's identity "${name}" limit "per-day" allows 3 requests per 86400 s`),
      ),
    });
    const badLimits = await api('PUT', `/admin/identities/${name}/limits`, { token: admin, body: {} });
    expect([badLimits.status, badLimits.body['code']]).toEqual([400, 'invalid_field']);

    // In use, it cannot be deleted; its trail lists what happened to it.
    const inUse = await api('DELETE', `/identities/${name}`);
    expect([inUse.status, inUse.body['code']]).toEqual([409, 'identity_in_use']);
    const events = await eventually('the identity events', async () => {
      const r = await api('GET', `/audit?identity=${name}`);
      const items = r.body['items'] as AuditItem[];
      return items.length >= 4 ? items : undefined;
    });
    expect(events.map((e) => e.action)).toEqual(
      expect.arrayContaining([
        'identity.created',
        'identity.credits_added',
        'identity.limits_changed',
        'key.created',
      ]),
    );
    expect(events.find((e) => e.action === 'identity.limits_changed')).toMatchObject({
      actor: 'root@example.com',
      detail: { creditsBefore: '30', credits: 'none', limits: 'per-day=3/86400s', keys: 3 },
    });

    // Deleted behind the API's back (kubectl delete): the operator rewrites its keys' entries, and
    // every replica refuses them rather than let them off the identity's limits.
    await rm(join(stateDir, 'identities', `${name}.yaml`));
    for (const base of [replica.url, directCaller.url]) {
      const gone = await eventually('the keys of a deleted identity refused', async () => {
        const r = await use(base, k2.key);
        return r.status === 403 ? r : undefined;
      });
      expect(gone).toMatchObject({ code: 'identity_missing' });
    }
    // Names are cluster-wide: bob may take the freed name. The keys left naming it are still
    // refused, and their usage never shows bob's identity's credits.
    const bobs = await api('POST', '/identities', { token: bob, body: { name, credits: { amount: 500 } } });
    expect(bobs.status).toBe(201);
    const afterTaken = await api('GET', `/apikeys/${k2.id}/usage`);
    expect(afterTaken.status).toBe(200);
    expect(afterTaken.body['identityCredits']).toBeUndefined();
    expect(afterTaken.body['credits']).toMatchObject({ amount: 1000 });
    expect(await use(replica.url, k2.key)).toMatchObject({ status: 403, code: 'identity_missing' });
  });
});

describe('webhooks', () => {
  interface DeliveryJson {
    id: string;
    type: string;
    status: string;
    attempts: number;
    lastError?: string;
  }
  const deliveries = async (id: string, query = ''): Promise<DeliveryJson[]> => {
    const r = await api('GET', `/webhooks/${id}/deliveries${query}`);
    expect(r.status).toBe(200);
    return r.body['items'] as DeliveryJson[];
  };
  const keyEvents = (r: WebhookReceiver, type: string, keyId: string) =>
    r.of(type).filter((e) => e.data?.['keyId'] === keyId);

  it("tell an owner's endpoint of their keys' events, signed the Standard Webhooks way, once each", async () => {
    const receiver = await new WebhookReceiver().start();
    const bobsReceiver = await new WebhookReceiver().start();
    try {
      const made = await api('POST', '/webhooks', {
        body: {
          url: receiver.url,
          events: [
            'key.created',
            'key.rolled',
            'key.revoked',
            'key.rate_limited',
            'credits.low',
            'credits.exhausted',
            'key.expiring',
          ],
          expiringDays: 3,
          description: 'ops',
        },
      });
      expect(made.status).toBe(201);
      expect(made.body['secret']).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      receiver.secret = made.body['secret'] as string;
      const hook = made.body['id'] as string;
      const bobs = await api('POST', '/webhooks', {
        token: bob,
        body: { url: bobsReceiver.url, events: ['key.created', 'key.revoked', 'credits.low'] },
      });
      bobsReceiver.secret = bobs.body['secret'] as string;
      expect(bobs.body['secret']).not.toBe(receiver.secret);

      const limited = await newKey({
        name: 'hooked',
        limits: [{ name: 'burst', requests: 1, windowSeconds: 3600 }],
      });
      const paying = await newKey({ name: 'paying', credits: { amount: 3 } });
      const soon = await newKey({
        name: 'soon',
        expiresAt: new Date(Date.now() + 2 * 86_400_000).toISOString(),
      });
      const later = await newKey({
        name: 'later',
        expiresAt: new Date(Date.now() + 10 * 86_400_000).toISOString(),
      });
      // The first refusal of the window is told, by whichever replica saw it; later ones are not.
      expect((await use(replica.url, limited.key)).status).toBe(200);
      expect((await use(directCaller.url, limited.key)).status).toBe(429);
      expect((await use(replica.url, limited.key)).status).toBe(429);
      // Credits: low once a tenth (at least one) is left, exhausted when the last is spent.
      const spends = [];
      for (const base of [replica.url, directCaller.url, behindProxy.url, replica.url])
        spends.push((await use(base, paying.key)).status);
      expect(spends).toEqual([200, 200, 200, 429]);
      const rolled = await api('POST', `/apikeys/${limited.id}/roll`, { body: { gracePeriodSeconds: 60 } });
      expect(rolled.status).toBe(201);
      expect((await api('DELETE', `/apikeys/${paying.id}`)).status).toBe(204);

      await eventually('every event delivered', async () =>
        keyEvents(receiver, 'key.revoked', paying.id).length === 1 &&
        keyEvents(receiver, 'key.expiring', soon.id).length === 1 &&
        keyEvents(receiver, 'credits.exhausted', paying.id).length === 1 &&
        keyEvents(receiver, 'key.rate_limited', limited.id).length === 1 &&
        keyEvents(receiver, 'key.rolled', limited.id).length === 1
          ? true
          : undefined,
      );
      // Scans on every replica went on meanwhile: each event came once.
      await sleep(1_000);
      for (const k of [limited, paying, soon, later])
        expect(keyEvents(receiver, 'key.created', k.id)).toHaveLength(1);
      expect(keyEvents(receiver, 'key.rate_limited', limited.id)).toHaveLength(1);
      expect(keyEvents(receiver, 'key.rate_limited', limited.id)[0]?.data).toMatchObject({
        keyName: 'hooked',
        owner: 'alice@example.com',
        detail: { limit: 'burst', requests: 1, windowSeconds: 3600 },
      });
      expect(keyEvents(receiver, 'credits.low', paying.id)).toHaveLength(1);
      expect(keyEvents(receiver, 'credits.low', paying.id)[0]?.data?.['detail']).toMatchObject({
        amount: 3,
        remaining: 1,
      });
      expect(keyEvents(receiver, 'credits.exhausted', paying.id)).toHaveLength(1);
      expect(keyEvents(receiver, 'key.rolled', limited.id)[0]?.data?.['detail']).toMatchObject({
        to: rolled.body['id'],
      });
      expect(keyEvents(receiver, 'key.expiring', soon.id)).toHaveLength(1);
      expect(keyEvents(receiver, 'key.expiring', later.id)).toHaveLength(0);
      // Every delivery verified; none carries a key.
      expect(receiver.received.filter((r) => !r.verified)).toEqual([]);
      const everything = receiver.received.map((r) => r.raw).join('\n');
      for (const k of [limited, paying, soon, later]) expect(everything).not.toContain(k.key);
      expect(everything).not.toContain(rolled.body['key'] as string);
      // Bob's endpoint hears of none of alice's keys.
      const alices = new Set([limited.id, paying.id, soon.id, later.id]);
      expect(bobsReceiver.received.filter((r) => alices.has(r.data?.['keyId'] as string))).toEqual([]);
      // The endpoint's log: what was sent, each once.
      const log = await deliveries(hook, '?status=delivered&limit=200');
      expect(log.length).toBeGreaterThanOrEqual(receiver.received.length);
      expect(new Set(log.map((d) => d.status))).toEqual(new Set(['delivered']));
      // Another user neither sees the endpoint nor its log.
      expect((await api('GET', `/webhooks/${hook}/deliveries`, { token: bob })).status).toBe(404);
      expect(((await api('GET', '/webhooks', { token: bob })).body['items'] as unknown[]).length).toBe(1);
      expect((await api('DELETE', `/webhooks/${hook}`)).status).toBe(204);
      expect((await api('DELETE', `/webhooks/${bobs.body['id'] as string}`, { token: bob })).status).toBe(
        204,
      );
    } finally {
      await receiver.stop();
      await bobsReceiver.stop();
    }
  });

  it('retry while the receiver is down, keep a failed delivery visible and replayable, and rotate the secret', async () => {
    const receiver = await new WebhookReceiver().start();
    try {
      const made = await api('POST', '/webhooks', { body: { url: receiver.url, events: ['key.revoked'] } });
      receiver.secret = made.body['secret'] as string;
      const hook = made.body['id'] as string;

      // Down for two attempts (503), then back: the third attempt lands, with the same webhook-id.
      receiver.failNext = 2;
      const first = await newKey();
      expect((await api('DELETE', `/apikeys/${first.id}`)).status).toBe(204);
      const landed = await eventually('the delivery after two failures', async () => {
        const d = (await deliveries(hook)).find((x) => x.status === 'delivered');
        return d;
      });
      expect(landed.attempts).toBe(3);
      expect(keyEvents(receiver, 'key.revoked', first.id)).toHaveLength(1);
      expect(keyEvents(receiver, 'key.revoked', first.id)[0]?.id).toBe(landed.id);

      // Refusing connections through every attempt: failed for good, and visible.
      await receiver.stop();
      const second = await newKey();
      expect((await api('DELETE', `/apikeys/${second.id}`)).status).toBe(204);
      const failed = await eventually(
        'the failed delivery',
        async () => (await deliveries(hook, '?status=failed'))[0],
      );
      expect(failed).toMatchObject({ type: 'key.revoked', attempts: 4 });
      expect(failed.lastError).toBe(
        'could not connect or send (the host unknown, refusing, or the connection cut)',
      );
      // Back up: a replay sends it now.
      await receiver.start();
      const replayed = await api('POST', `/webhooks/${hook}/deliveries/${failed.id}/replay`);
      expect([replayed.status, replayed.body['status'], replayed.body['attempts']]).toEqual([
        202,
        'pending',
        0,
      ]);
      await eventually('the replayed delivery', async () =>
        keyEvents(receiver, 'key.revoked', second.id).length === 1 ? true : undefined,
      );
      const unknown = await api('POST', `/webhooks/${hook}/deliveries/msg_${'0'.repeat(24)}/replay`);
      expect([unknown.status, unknown.body['code']]).toEqual([404, 'delivery_not_found']);

      // A rotated secret: signed with the new one only (the old one no longer verifies).
      const rotated = await api('POST', `/webhooks/${hook}/rotate-secret`);
      expect(rotated.status).toBe(200);
      expect(rotated.body['secret']).not.toBe(receiver.secret);
      const third = await newKey();
      expect((await api('DELETE', `/apikeys/${third.id}`)).status).toBe(204);
      await eventually('a delivery refused under the old secret', async () =>
        receiver.received.some((r) => !r.verified) ? true : undefined,
      );
      receiver.secret = rotated.body['secret'] as string;
      await eventually('the retry verified under the new secret', async () =>
        keyEvents(receiver, 'key.revoked', third.id).length === 1 ? true : undefined,
      );

      // Bad endpoints are refused, saying which field.
      for (const [body, code, field] of [
        [{ url: 'http://10.1.2.3/hooks', events: ['key.revoked'] }, 'invalid_field', 'url'],
        [{ url: 'http://[::1]:9/hooks', events: ['key.revoked'] }, 'invalid_field', 'url'],
        [{ url: 'ftp://example.com/hooks', events: ['key.revoked'] }, 'invalid_field', 'url'],
        [{ url: receiver.url, events: [] }, 'invalid_field', 'events'],
        [{ url: receiver.url, events: ['key.exploded'] }, 'invalid_field', 'events'],
        [{ url: receiver.url, events: ['key.revoked'], secret: 'mine' }, 'unknown_field', 'secret'],
      ] as const) {
        const r = await api('POST', '/webhooks', { body });
        expect([r.status, r.body['code'], r.body['field']]).toEqual([400, code, field]);
      }
      const notAdmin = await api('POST', '/webhooks', {
        body: { url: receiver.url, events: ['key.revoked'], allOwners: true },
      });
      expect([notAdmin.status, notAdmin.body['code']]).toEqual([403, 'admin_required']);
      expect((await api('DELETE', `/webhooks/${hook}`)).status).toBe(204);
      expect((await api('GET', `/webhooks/${hook}/deliveries`)).status).toBe(404);
    } finally {
      await receiver.stop();
    }
  });

  it("an administrator's allOwners endpoint hears every user's events only while its creator is still an administrator", async () => {
    const receiver = await new WebhookReceiver().start();
    const root = 'root-allowners@example.com';
    try {
      const asAdmin = await token(root, 'platform-ops');
      const made = await api('POST', '/webhooks', {
        token: asAdmin,
        body: { url: receiver.url, events: ['key.revoked'], allOwners: true },
      });
      expect(made.status).toBe(201);
      receiver.secret = made.body['secret'] as string;
      const hook = made.body['id'] as string;
      // alice's key revoked: heard, the creator being an administrator.
      const first = await newKey();
      expect((await api('DELETE', `/apikeys/${first.id}`)).status).toBe(204);
      await eventually("alice's revocation is heard", async () =>
        keyEvents(receiver, 'key.revoked', first.id).length === 1 ? true : undefined,
      );
      // The creator signs in again without the group: their right has gone.
      const asUser = await token(root);
      expect((await api('GET', '/webhooks', { token: asUser })).status).toBe(200);
      const second = await newKey();
      expect((await api('DELETE', `/apikeys/${second.id}`)).status).toBe(204);
      // Their own key's events still come.
      const own = await api('POST', '/apikeys', {
        token: asUser,
        body: { module: 'platform', roles: ['viewer'] },
      });
      expect(own.status).toBe(201);
      expect((await api('DELETE', `/apikeys/${own.body['id'] as string}`, { token: asUser })).status).toBe(
        204,
      );
      await eventually('their own revocation is heard', async () =>
        keyEvents(receiver, 'key.revoked', own.body['id'] as string).length === 1 ? true : undefined,
      );
      // alice's, revoked before theirs, never was.
      expect(keyEvents(receiver, 'key.revoked', second.id)).toHaveLength(0);
      const log = (await api('GET', `/webhooks/${hook}/deliveries`, { token: asUser })).body[
        'items'
      ] as Array<{
        type: string;
      }>;
      expect(log).toHaveLength(2);
      // An administrator again: every user's events again.
      const again = await token(root, 'platform-ops');
      expect((await api('GET', '/webhooks', { token: again })).status).toBe(200);
      const third = await newKey();
      expect((await api('DELETE', `/apikeys/${third.id}`)).status).toBe(204);
      await eventually("alice's next revocation is heard", async () =>
        keyEvents(receiver, 'key.revoked', third.id).length === 1 ? true : undefined,
      );
      expect((await api('DELETE', `/webhooks/${hook}`, { token: again })).status).toBe(204);
    } finally {
      await receiver.stop();
    }
  });
});

interface AuditItem {
  id: string;
  at: string;
  action: string;
  keyId: string;
  actor: string;
  address?: string;
  detail?: Record<string, unknown>;
}

describe('the audit trail', () => {
  const audit = async (query: string, user = alice): Promise<{ items: AuditItem[]; nextCursor?: string }> => {
    const r = await api('GET', `/audit${query}`, { token: user });
    expect(r.status).toBe(200);
    return r.body as never;
  };

  it('holds a key to its named limits; an administrator overrides them on every replica at once, in the trail', async () => {
    const day = 86_400;
    const k = await newKey({ limits: [{ name: 'burst', requests: 2, windowSeconds: day }] });
    expect((await use(replica.url, k.key)).status).toBe(200);
    expect((await use(directCaller.url, k.key)).status).toBe(200);
    const over = await use(replica.url, k.key);
    expect([over.status, over.code]).toEqual([429, 'rate_limited']);
    expect(over.message).toMatch(/limit "burst" allows 2 requests per 86400 s/);

    // Not an administrator: refused, and nothing changes.
    const refused = await api('PUT', `/admin/apikeys/${k.id}/limits`, { body: { limits: null } });
    expect([refused.status, refused.body['code']]).toEqual([403, 'admin_required']);
    const admin = await token('root@example.com', 'platform-ops');
    const set = await api('PUT', `/admin/apikeys/${k.id}/limits`, {
      token: admin,
      body: {
        rateLimit: { requests: 1000, windowSeconds: 60 },
        limits: [{ name: 'per-day', requests: 3, windowSeconds: day }],
      },
    });
    expect(set).toMatchObject({ status: 200, audit: 'stored' });
    expect([set.body['rateLimit'], set.body['limits']]).toEqual([
      { requests: 1000, windowSeconds: 60 },
      [{ name: 'per-day', requests: 3, windowSeconds: day }],
    ]);
    // Both replicas had the old grant cached: each takes the new limits at once.
    const statuses = [];
    for (const base of [replica.url, directCaller.url, replica.url, directCaller.url])
      statuses.push((await use(base, k.key)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const removed = await api('PUT', `/admin/apikeys/${k.id}/limits`, {
      token: admin,
      body: { rateLimit: null, limits: null },
    });
    expect([removed.status, removed.body['limits'], removed.body['rateLimit']]).toEqual([
      200,
      undefined,
      undefined,
    ]);
    expect((await use(replica.url, k.key)).status).toBe(200);

    const events = await eventually('the limits events', async () => {
      const page = await audit(`?keyId=${k.id}&action=key.limits_changed`);
      return page.items.length === 2 ? page.items : undefined;
    });
    expect(events[1]).toMatchObject({
      actor: 'root@example.com',
      detail: {
        limitsBefore: 'burst=2/86400s',
        limits: 'per-day=3/86400s',
        rateLimitBefore: 'none',
        rateLimit: '1000/60s',
      },
    });
    // Its owner sees the change in their own trail.
    expect(events[0]).toMatchObject({ detail: { limits: 'none', rateLimit: 'none' } });
  });

  it('spends credits across every replica, admitting no call past them; an administrator tops them up', async () => {
    const k = await newKey({ credits: { amount: 40 } });
    const bases = [devUrl, replica.url, behindProxy.url, directCaller.url];
    const seenBefore = upstream.seen.length;
    // 120 callers at once, spread over four gateway processes.
    const results = await Promise.all(Array.from({ length: 120 }, (_, i) => use(bases[i % 4]!, k.key)));
    const admitted = results.filter((r) => r.status === 200).length;
    expect(admitted).toBe(40);
    expect(new Set(results.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.code}`))).toEqual(
      new Set(['429 credits_exhausted']),
    );
    expect(upstream.seen.length - seenBefore).toBe(40);
    expect(results.find((r) => r.status === 429)?.message).toBe(
      "this key's 40 credits are spent; an administrator can add more",
    );
    // Refusals gave their credits back: the count is the calls admitted.
    const usage = await api('GET', `/apikeys/${k.id}/usage`);
    expect(usage.body['credits']).toEqual({ amount: 40, spent: 40, remaining: 0 });

    const admin = await token('root@example.com', 'platform-ops');
    const notAdmin = await api('POST', `/admin/apikeys/${k.id}/credits`, { body: { add: 5 } });
    expect([notAdmin.status, notAdmin.body['code']]).toEqual([403, 'admin_required']);
    const topped = await api('POST', `/admin/apikeys/${k.id}/credits`, { token: admin, body: { add: 5 } });
    expect(topped).toMatchObject({ status: 200, audit: 'stored', body: { remaining: 5, spent: 35 } });
    const after = [];
    for (let i = 0; i < 6; i++) after.push((await use(bases[i % 4]!, k.key)).status);
    expect(after).toEqual([200, 200, 200, 200, 200, 429]);
    const bad = await api('POST', `/admin/apikeys/${k.id}/credits`, { token: admin, body: { add: 0 } });
    expect([bad.status, bad.body['code'], bad.body['field']]).toEqual([400, 'invalid_field', 'add']);
    const none = await newKey();
    const noCredits = await api('POST', `/admin/apikeys/${none.id}/credits`, {
      token: admin,
      body: { add: 1 },
    });
    expect([noCredits.status, noCredits.body['code']]).toEqual([400, 'invalid_field']);

    // Rolling resets no quota: the new key spends the same credits and fills the same windows as
    // the old one, which shares them through its grace period (the hole rolling opens in Tyk).
    const rolling = await newKey({
      credits: { amount: 3 },
      limits: [{ name: 'per-day', requests: 4, windowSeconds: 86_400 }],
    });
    expect((await use(replica.url, rolling.key)).status).toBe(200);
    expect((await use(directCaller.url, rolling.key)).status).toBe(200);
    const rolled = await api('POST', `/apikeys/${rolling.id}/roll`, { body: { gracePeriodSeconds: 600 } });
    expect(rolled.status).toBe(201);
    const newKeyValue = rolled.body['key'] as string;
    expect((await use(replica.url, newKeyValue)).status).toBe(200);
    const spentNew = await use(directCaller.url, newKeyValue);
    const spentOld = await use(replica.url, rolling.key);
    expect([spentNew.code, spentOld.code]).toEqual(['credits_exhausted', 'credits_exhausted']);
    expect((await api('GET', `/apikeys/${rolled.body['id'] as string}/usage`)).body['credits']).toEqual({
      amount: 3,
      spent: 3,
      remaining: 0,
    });

    // A resource that costs more: each call spends its cost, and one it cannot afford is refused.
    const costly = await newKey({ credits: { amount: 10 } });
    const report = async (base: string) => {
      const res = await fetch(`${base}/events/platform/api/v1/reports`, {
        headers: { authorization: `Apikey ${costly.key}` },
      });
      const body = (await res.json()) as { code?: string; error?: string };
      return { status: res.status, code: body.code, message: body.error };
    };
    const reports = [];
    for (const base of [replica.url, directCaller.url, devUrl, replica.url]) reports.push(await report(base));
    expect(reports.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(reports[3]).toMatchObject({
      code: 'credits_exhausted',
      message: "this key's 10 credits are spent (this call costs 3; 1 left); an administrator can add more",
    });
    expect((await use(replica.url, costly.key)).status).toBe(200);
    expect((await api('GET', `/apikeys/${costly.id}/usage`)).body['credits']).toEqual({
      amount: 10,
      spent: 10,
      remaining: 0,
    });

    // A refilling key says when its credits come back.
    const daily = await newKey({ credits: { amount: 1, refill: 'daily' } });
    expect((await use(replica.url, daily.key)).status).toBe(200);
    const spentToday = await use(replica.url, daily.key);
    expect([spentToday.status, spentToday.code]).toEqual([429, 'credits_exhausted']);
    expect(spentToday.message).toMatch(
      /^this key's 1 credits for this day are spent; they refill at \d{4}-\d\d-\d\dT00:00:00\.000Z$/,
    );
  });

  it('revokes a key a scanning service reports, on every replica, and the trail says where it was found', async () => {
    const k = await newKey({ name: 'in a gist' });
    expect((await use(replica.url, k.key)).status).toBe(200);
    const body = JSON.stringify([
      { token: k.key, type: 'tollgate_platform_key', url: 'https://example.com/gist/1', source: 'gist' },
    ]);
    const res = await fetch(`${devUrl}/api/v1/leaked-keys`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'github-public-key-identifier': scanner.keyId,
        'github-public-key-signature': scanner.sign(Buffer.from(body)),
      },
      body,
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Array<{ label: string }>).map((v) => v.label)).toEqual(['true_positive']);
    // Refused at once on the replicas that had it cached: its entry is gone (401 unknown_api_key;
    // 503 index_rebuilding while the index marker is down, as after this file's Redis flush).
    for (const base of [replica.url, directCaller.url]) {
      const after = await use(base, k.key);
      expect([base, after.code]).toEqual([
        base,
        expect.stringMatching(/^(unknown_api_key|index_rebuilding)$/),
      ]);
      expect(await client.exists(redisKeys.apiKey(hashKey(k.key)))).toBe(0);
    }
    const events = await eventually('the leak events', async () => {
      const page = await audit(`?keyId=${k.id}`);
      return page.items.some((e) => e.action === 'key.deleted') ? page.items : undefined;
    });
    expect(events.map((e) => e.action)).toEqual(['key.deleted', 'key.leaked', 'key.created']);
    expect(events[1]).toMatchObject({
      actor: 'leak-report',
      detail: { url: 'https://example.com/gist/1', source: 'gist', outcome: 'revoked' },
    });
    expect(events[0]).toMatchObject({
      actor: 'leak-report',
      detail: { reason: 'reported leaked at https://example.com/gist/1' },
    });
  });

  it('records who did what to a key, when and from where, and refused uses at a bounded rate', async () => {
    const k = await newKey();
    const rolled = await api('POST', `/apikeys/${k.id}/roll`, { body: { gracePeriodSeconds: 0 } });
    // Answered once its events are in the store, not merely queued in memory.
    expect(rolled).toMatchObject({ status: 201, audit: 'stored' });
    const newId = rolled.body['id'] as string;
    // A flood of refused uses of the old key makes one event (per key per minute), not fifty.
    for (let i = 0; i < 50; i++) expect((await use(replica.url, k.key)).status).toBe(401);
    expect(await api('DELETE', `/apikeys/${newId}`)).toMatchObject({ status: 204, audit: 'stored' });

    const mine = await eventually('the events', async () => {
      const page = await audit(`?keyId=${k.id}`);
      return page.items.some((e) => e.action === 'key.refused') ? page.items : undefined;
    });
    expect(mine.map((e) => e.action)).toEqual(['key.refused', 'key.rolled', 'key.created']);
    const [refused, roll, created] = mine as [AuditItem, AuditItem, AuditItem];
    expect(created).toMatchObject({ actor: 'alice@example.com', address: '127.0.0.1' });
    expect(roll).toMatchObject({ actor: 'alice@example.com', detail: { to: newId } });
    expect(refused).toMatchObject({
      actor: `key:${k.id}`,
      address: '127.0.0.1',
      detail: { code: 'rolled_api_key' },
    });
    const deleted = (await audit(`?keyId=${newId}&action=key.deleted`)).items;
    expect(deleted).toHaveLength(1);
    expect(deleted[0]).toMatchObject({ actor: 'alice@example.com', keyId: newId });
    // Never a key, nor its hash.
    const all = JSON.stringify((await audit('?limit=500')).items);
    expect(all).not.toContain(k.key);
    expect(all).not.toContain(rolled.body['key'] as string);
    expect(all).not.toMatch(/tg[bp]_[0-9A-Za-z]{20,}/);
  });

  it('shows each owner only the events of their keys, pages without overlap, and checks its query', async () => {
    // Bob's trail: his own webhook's events only, none of alice's keys.
    const bobs = (await audit('', bob)).items;
    // (and the identity he made under a name another owner's had held: see 'identities')
    expect(new Set(bobs.map((e) => e.action))).toEqual(
      new Set(['webhook.created', 'webhook.deleted', 'identity.created']),
    );
    expect(bobs.every((e) => (e as unknown as { owner: string }).owner === 'bob@example.com')).toBe(true);
    const first = await audit('?limit=2');
    expect(first.items).toHaveLength(2);
    expect(first.nextCursor).toBeDefined();
    const second = await audit(`?limit=2&cursor=${first.nextCursor ?? ''}`);
    expect(second.items.map((e) => e.id)).not.toContain(first.items[0]!.id);
    expect(second.items.map((e) => e.id)).not.toContain(first.items[1]!.id);
    expect(Date.parse(second.items[0]!.at)).toBeLessThanOrEqual(Date.parse(first.items[1]!.at));
    const future = await audit(
      `?since=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`,
    );
    expect(future.items).toEqual([]);

    const bad: Array<[string, string, string]> = [
      ['?action=key.eaten', 'invalid_field', 'action'],
      ['?since=yesterday', 'invalid_field', 'since'],
      ['?since=2030-01-02T00:00:00Z&until=2030-01-01T00:00:00Z', 'invalid_field', 'since'],
      ['?limit=0', 'invalid_field', 'limit'],
      ['?keyId=KEY', 'invalid_field', 'keyId'],
      ['?colour=red', 'unknown_field', 'colour'],
      ['?cursor=bm90LW91cnM', 'invalid_cursor', 'cursor'],
    ];
    for (const [query, code, field] of bad) {
      const r = await api('GET', `/audit${query}`);
      expect({ query, status: r.status, code: r.body['code'], field: r.body['field'] }).toEqual({
        query,
        status: 400,
        code,
        field,
      });
    }
    const noToken = await fetch(`${devUrl}/api/v1/audit`);
    expect(noToken.status).toBe(401);
  });

  it('survives a Redis flush and a restart of every gateway', async () => {
    const before = (await audit('?limit=500')).items;
    expect(before.length).toBeGreaterThan(5);
    await client.flushall();
    await stopDev();
    replica.child.kill('SIGTERM');
    await replica.exited;
    await startDev();
    replica = await spawnGateway(sharedEnv());
    const after = (await audit('?limit=500')).items;
    expect(after.map((e) => e.id)).toEqual(before.map((e) => e.id));
    // And the trail goes on: a key created now is recorded after the restart.
    const k = await newKey();
    const page = await eventually('a new event', async () => {
      const p = await audit(`?keyId=${k.id}`);
      return p.items.length > 0 ? p.items : undefined;
    });
    expect(page[0]?.action).toBe('key.created');
  });
});
