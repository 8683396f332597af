// Usage exported, on real processes: `tollgate dev` (management API, webhooks) and a second
// `tollgate gateway` replica on the same Redis. Calls through both come out as CloudEvents, a
// minute per key, identity and target, from the pull API and to webhook endpoints: an endpoint
// down for a while, past its retries, still gets every event (deduplicated by id, the counts are
// exact), an owner's endpoint hears only their keys, an administrator's allOwners one everyone's.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort, redis } from '../../harness/index.js';
import { spawnGateway, type GatewayProcess } from '../gateway/process.js';
import { startUpstream, type Upstream } from '../gateway/support.js';
import { removeTempDirs, tempDir } from './fixtures.js';
import { WebhookReceiver } from './webhook-receiver.js';
import { usageEventSchema, type UsageEvent } from '../../../gateway/usage-export/cloud-events.js';

const run = promisify(execFile);
const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'tollgate.js');

let stateDir: string;
let redisUrl: string;
let upstream: Upstream;
let dev: ChildProcess | undefined;
let devLog = '';
let devUrl: string;
let replica: GatewayProcess;
let alice: string;
let bob: string;
let admin: string;

function sharedEnv(): Record<string, string> {
  return {
    NODE_OPTIONS: '',
    TOLLGATE_REDIS_URL: redisUrl,
    TOLLGATE_UPSTREAMS: `datasets=${upstream.url},reports=${upstream.url}`,
    TOLLGATE_CREDIT_COSTS: 'reports=3',
    TOLLGATE_ADMIN_GROUPS: 'platform-ops',
    TOLLGATE_GRANT_SIGNING_KEY_FILE: join(stateDir, 'grant-signing-key.json'),
    TOLLGATE_USAGE_FLUSH_MS: '200',
    TOLLGATE_USAGE_EXPORT_SOURCE: '/tollgate/test',
    TOLLGATE_WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    TOLLGATE_WEBHOOK_ALLOW_HTTP: 'true',
    TOLLGATE_WEBHOOK_RETRY_SECONDS: '0.3,0.3,0.3',
    TOLLGATE_WEBHOOK_POLL_MS: '100',
    LOG_LEVEL: 'warn',
  };
}

async function token(user: string, group?: string): Promise<string> {
  const groups = group === undefined ? [] : ['--group', group];
  const { stdout } = await run(
    process.execPath,
    [BIN, 'token', '--user', user, '--state-dir', stateDir, ...groups],
    {
      env: { ...process.env, NODE_OPTIONS: '' },
    },
  );
  return stdout.trim();
}

async function api(
  method: string,
  path: string,
  as: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${devUrl}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${as}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function call(base: string, key: string, resource: string, method = 'GET'): Promise<number> {
  const res = await fetch(`${base}/events/platform/api/v1/${resource}`, {
    method,
    headers: { authorization: `Apikey ${key}` },
  });
  await res.arrayBuffer();
  return res.status;
}

async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${devLog.slice(-3_000)}`);
    await sleep(250);
  }
}

/** Every event the pull API has, read `limit` at a time from the start. */
async function pulled(limit = 500): Promise<UsageEvent[]> {
  const out: UsageEvent[] = [];
  let since: string | undefined;
  for (;;) {
    const r = await api(
      'GET',
      `/admin/usage/export?limit=${limit}${since === undefined ? '' : `&since=${since}`}`,
      admin,
    );
    expect(r.status).toBe(200);
    out.push(...(r.body['events'] as unknown[]).map((e) => usageEventSchema.parse(e)));
    if (r.body['more'] !== true) return out;
    since = r.body['next'] as string;
  }
}

/** The events of several deliveries, each once (by id, as a receiver dedupes them). */
function deduped(receiver: WebhookReceiver): UsageEvent[] {
  const byId = new Map<string, UsageEvent>();
  for (const r of receiver.received)
    if (r.verified && Array.isArray(r.payload))
      for (const e of r.payload as unknown[]) {
        const event = usageEventSchema.parse(e);
        byId.set(event.id, event);
      }
  return [...byId.values()];
}

/** Sums of one key's events: calls, credits, and refusals by code. */
function totals(events: readonly UsageEvent[], keyId: string) {
  const mine = events.filter((e) => e.data.keyId === keyId);
  const refusals: Record<string, number> = {};
  for (const e of mine)
    for (const [code, n] of Object.entries(e.data.refusals)) refusals[code] = (refusals[code] ?? 0) + n;
  return {
    calls: mine.reduce((a, e) => a + e.data.calls, 0),
    credits: mine.reduce((a, e) => a + e.data.credits, 0),
    refusals,
  };
}

beforeAll(async () => {
  stateDir = await tempDir('tollgate-usage-export-');
  redisUrl = (await redis('usage-export')).url;
  upstream = await startUpstream();
  const port = await freePort();
  devUrl = `http://127.0.0.1:${port}`;
  dev = spawn(
    process.execPath,
    [BIN, 'dev', '--port', String(port), '--state-dir', stateDir, '--redis-url', redisUrl],
    {
      env: { ...process.env, ...sharedEnv() },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const keep = (c: Buffer): void => void (devLog = (devLog + c.toString()).slice(-20_000));
  dev.stdout?.on('data', keep);
  dev.stderr?.on('data', keep);
  await eventually(
    'tollgate dev to start',
    async () => ((await fetch(`${devUrl}/readyz`).catch(() => undefined))?.ok ? true : undefined),
    30_000,
  );
  replica = await spawnGateway(sharedEnv());
  [alice, bob, admin] = [
    await token('alice@example.com'),
    await token('bob@example.com'),
    await token('root@example.com', 'platform-ops'),
  ];
}, 120_000);

afterAll(async () => {
  replica?.child.kill('SIGKILL');
  if (dev !== undefined && dev.exitCode === null) {
    const exited = new Promise((r) => dev?.once('exit', r));
    dev.kill('SIGTERM');
    await exited;
  }
  await upstream?.close();
  await removeTempDirs();
});

describe('usage exported', () => {
  it('calls through two replicas come out as CloudEvents, to the pull API and to endpoints down for a while, each counted once', async () => {
    const aliceReceiver = await new WebhookReceiver().start();
    const rootReceiver = await new WebhookReceiver().start();
    try {
      // Alice's endpoint is down: it refuses her usage past the three retries, and once more.
      aliceReceiver.failNext = 6;
      const hers = await api('POST', '/webhooks', alice, {
        url: aliceReceiver.url,
        events: ['usage.minute'],
      });
      expect(hers.status).toBe(201);
      aliceReceiver.secret = hers.body['secret'] as string;
      const everyone = await api('POST', '/webhooks', admin, {
        url: rootReceiver.url,
        events: ['usage.minute'],
        allOwners: true,
      });
      expect(everyone.status).toBe(201);
      rootReceiver.secret = everyone.body['secret'] as string;
      // Only an administrator's endpoint hears everyone's.
      expect(
        (
          await api('POST', '/webhooks', bob, {
            url: rootReceiver.url,
            events: ['usage.minute'],
            allOwners: true,
          })
        ).status,
      ).toBe(403);

      expect((await api('POST', '/identities', alice, { name: 'acme' })).status).toBe(201);
      const made = async (as: string, body: Record<string, unknown>) => {
        const r = await api('POST', '/apikeys', as, { module: 'platform', roles: ['viewer'], ...body });
        expect(r.status).toBe(201);
        return { id: r.body['id'] as string, key: r.body['key'] as string };
      };
      const plain = await made(alice, {});
      const acme = await made(alice, { identity: 'acme' });
      const bobs = await made(bob, {});

      const replicaUrl = replica.url;
      for (let i = 0; i < 5; i++) expect(await call(devUrl, plain.key, 'datasets')).toBe(200);
      for (let i = 0; i < 4; i++) expect(await call(replicaUrl, plain.key, 'datasets')).toBe(200);
      for (let i = 0; i < 3; i++)
        expect(await call(i % 2 === 0 ? devUrl : replicaUrl, acme.key, 'reports')).toBe(200);
      for (let i = 0; i < 2; i++) expect(await call(replicaUrl, plain.key, 'datasets', 'PUT')).toBe(403);
      for (let i = 0; i < 2; i++) expect(await call(devUrl, bobs.key, 'datasets')).toBe(200);

      // Once their minute is over and closed: every call, from either replica, in the pull API.
      const events = await eventually(
        'the minute’s usage in the export',
        async () => {
          const all = await pulled();
          return totals(all, plain.id).calls === 9 &&
            totals(all, bobs.id).calls === 2 &&
            totals(all, acme.id).calls === 3
            ? all
            : undefined;
        },
        100_000,
      );
      expect(totals(events, plain.id)).toEqual({ calls: 9, credits: 9, refusals: { role_not_allowed: 2 } });
      expect(totals(events, acme.id)).toEqual({ calls: 3, credits: 9, refusals: {} });
      const acmeEvent = events.find((e) => e.data.keyId === acme.id && e.data.calls > 0);
      expect(acmeEvent).toMatchObject({
        source: '/tollgate/test',
        type: 'dev.tollgate.usage.minute',
        subject: 'acme',
        data: { owner: 'alice@example.com', identity: 'acme', target: { kind: 'platform', name: 'reports' } },
      });
      expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
      // The same figures the key's own usage shows.
      const shown = await api('GET', `/apikeys/${plain.id}`, alice);
      expect([shown.body['requestCount'], shown.body['refusalCount']]).toEqual([9, 2]);

      // Paged one at a time: the same events, in order.
      expect((await pulled(1)).map((e) => e.id)).toEqual(events.map((e) => e.id));

      // The administrator's endpoint has everyone's; alice's, once it is back, hers only: exact.
      await eventually(
        'everyone’s usage delivered',
        async () =>
          totals(deduped(rootReceiver), bobs.id).calls === 2 &&
          totals(deduped(rootReceiver), plain.id).calls === 9
            ? true
            : undefined,
        30_000,
      );
      expect(totals(deduped(rootReceiver), acme.id)).toEqual({ calls: 3, credits: 9, refusals: {} });
      await eventually(
        'alice’s usage delivered past her endpoint’s outage',
        async () => (totals(deduped(aliceReceiver), plain.id).calls === 9 ? true : undefined),
        30_000,
      );
      // All six refusals were spent: past the four attempts of the first send, into its resend.
      expect(aliceReceiver.failNext).toBe(0);
      const aliceEvents = deduped(aliceReceiver);
      expect(totals(aliceEvents, plain.id)).toEqual({
        calls: 9,
        credits: 9,
        refusals: { role_not_allowed: 2 },
      });
      expect(totals(aliceEvents, acme.id)).toEqual({ calls: 3, credits: 9, refusals: {} });
      expect(aliceEvents.filter((e) => e.data.owner !== 'alice@example.com')).toEqual([]);
      expect(
        aliceReceiver.received
          .filter((r) => r.verified)
          .every((r) => r.contentType === 'application/cloudevents-batch+json'),
      ).toBe(true);
      // Its deliveries say what happened: refused past the retries, then sent again and delivered.
      const log = await api('GET', `/webhooks/${hers.body['id'] as string}/deliveries`, alice);
      const usage = (log.body['items'] as Array<{ type: string; status: string }>).filter(
        (d) => d.type === 'usage.minute',
      );
      expect(usage.some((d) => d.status === 'delivered')).toBe(true);
    } finally {
      await aliceReceiver.stop();
      await rootReceiver.stop();
    }
  }, 180_000);

  it('the pull API is administrators’ only, and says what to fix in a bad query', async () => {
    const mine = await api('GET', '/admin/usage/export', alice);
    expect([mine.status, mine.body['code']]).toEqual([403, 'admin_required']);
    const cases: Array<[string, RegExp]> = [
      ['since=yesterday', /since is the `next` of a previous answer/],
      ['since=1-2-3', /since is the `next` of a previous answer/],
      ['limit=0', /limit must be a whole number from 1 to 1000/],
      ['limit=5000', /limit must be a whole number from 1 to 1000/],
      ['cursor=abc', /cursor/],
    ];
    for (const [query, message] of cases) {
      const r = await api('GET', `/admin/usage/export?${query}`, admin);
      expect([query, r.status, String(r.body['error'])]).toEqual([
        query,
        400,
        expect.stringMatching(message),
      ]);
    }
    // A time is a place too: nothing closed in the future.
    const future = await api(
      'GET',
      `/admin/usage/export?since=${new Date(Date.now() + 3_600_000).toISOString()}`,
      admin,
    );
    expect([future.status, future.body['events'], future.body['more']]).toEqual([200, [], false]);
  });
});
