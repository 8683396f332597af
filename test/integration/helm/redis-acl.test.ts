import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { parseAllDocuments } from 'yaml';
import { generateKey, hashKey } from '../../../common/apikey/format.js';
import { KeyIndexWriter } from '../../../common/apikey/index-writer.js';
import { redisChannels, redisKeys, routeChangeTag } from '../../../common/redis/schema.js';
import { type GatewayServices } from '../../../gateway/services.js';
import { createSidecar, type Sidecar } from '../../../gateway/sidecar/sidecar.js';
import { redis } from '../../harness/index.js';
import { binDir, repoRoot } from '../../harness/paths.js';
import { testSealer } from '../signing.js';
import { markIndexBuilt } from '../workflow-route.js';
import {
  apikey,
  newId,
  send,
  startUpstream,
  uniqueName,
  type Upstream,
  sidecarServices,
} from '../gateway/support.js';

/**
 * The Redis users the chart gives each component, taken from what `helm template` renders (the
 * README tells an external Redis's administrator the same rules), applied to a real redis-server
 * with ACL SETUSER: each component works as its own user, and the sidecar's user, whose password a
 * team can read, can mint, widen, reroute, flush or announce nothing.
 */
const run = promisify(execFile);
const USERS = ['operator', 'gateway', 'sidecar'] as const;

async function chartRules(): Promise<Record<(typeof USERS)[number], string>> {
  const { stdout } = await run(
    join(binDir, 'helm'),
    ['template', 't1', join(repoRoot, 'helm', 'tollgate'), '--namespace', 'ns', '--kube-version', '1.34.4'],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const acl = parseAllDocuments(stdout)
    .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; data?: Record<string, string> })
    .find((o) => o?.kind === 'ConfigMap' && o.metadata?.name === 't1-tollgate-redis-acl');
  if (acl?.data === undefined) throw new Error('the chart renders no t1-tollgate-redis-acl ConfigMap');
  const data = acl.data;
  return Object.fromEntries(USERS.map((u) => [u, data[u] ?? ''])) as Record<(typeof USERS)[number], string>;
}

describe('the Redis users of the chart, on a real redis-server', () => {
  let admin: Redis;
  let url: (user: string) => string;
  let sidecarClient: Redis;
  let upstream: Upstream;
  let services: GatewayServices;
  let sidecar: Sidecar;
  let sidecarUrl: string;
  const workflow = uniqueName('wf-acl');
  const passwords = Object.fromEntries(USERS.map((u) => [u, `pw-${u}-${newId()}`]));

  beforeAll(async () => {
    const rules = await chartRules();
    const info = await redis('redis-acl');
    // A user of the test's own to administer the server once the default user is off.
    const first = new Redis(info.url, { maxRetriesPerRequest: 1 });
    await first.call('ACL', 'SETUSER', 'test-admin', 'on', '>test-admin', '~*', '&*', '+@all');
    first.disconnect();
    admin = new Redis(info.url.replace('redis://', 'redis://test-admin:test-admin@'), {
      maxRetriesPerRequest: 1,
    });
    for (const u of USERS)
      await admin.call(
        'ACL',
        'SETUSER',
        `tollgate-${u}`,
        'reset',
        'on',
        `>${passwords[u]}`,
        // A selector, `(…)`, is one argument.
        ...(rules[u].match(/\([^)]*\)|\S+/g) ?? []),
      );
    url = (u) => info.url.replace('redis://', `redis://tollgate-${u}:${passwords[u]}@`);
    sidecarClient = new Redis(url('sidecar'), { maxRetriesPerRequest: 1 });
    upstream = await startUpstream();
    services = await sidecarServices(url('sidecar'), { usageFlushMs: 100 });
    sidecar = createSidecar(services, {
      kind: 'workflow',
      namespace: 'default',
      upstream: new URL(upstream.url),
      workflow,
      service: 'svc',
    });
    sidecarUrl = `http://127.0.0.1:${(await sidecar.traffic.listen(0, '127.0.0.1')).port}`;
  });

  afterAll(async () => {
    await sidecar?.traffic.shutdown();
    await upstream?.close();
    sidecarClient?.disconnect();
    // The instance is this file's alone: its default user back on for the harness's checks.
    await admin?.call('ACL', 'DELUSER', ...USERS.map((u) => `tollgate-${u}`), 'test-admin');
    admin?.disconnect();
  });

  it("every user reads Redis's clock, which the limits' windows follow (gateway/auth/redis-clock.ts)", async () => {
    for (const u of USERS) {
      const client = new Redis(url(u), { maxRetriesPerRequest: 1 });
      try {
        const [seconds] = await client.time();
        expect({ user: u, skewS: Math.abs(Number(seconds) - Date.now() / 1000) < 60 }).toEqual({
          user: u,
          skewS: true,
        });
      } finally {
        client.disconnect();
      }
    }
  });

  it('the gateway user writes the key index and the sidecar user reads it: a call passes, with its usage counted', async () => {
    const gateway = new Redis(url('gateway'), { maxRetriesPerRequest: 1 });
    try {
      const key = generateKey('bda');
      await new KeyIndexWriter(gateway, await testSealer()).put(hashKey(key), {
        id: newId(),
        owner: 'alice',
        module: 'bda',
        roles: [workflow],
        rateLimit: { requests: 100, windowSeconds: 60 },
      });
      await markIndexBuilt(gateway);
      const answer = await send(sidecarUrl, '/hello', { headers: apikey(key) });
      expect(answer.status).toBe(200);
      expect(upstream.seen.at(-1)?.url).toBe('/hello');
    } finally {
      gateway.disconnect();
    }
  });

  it('the sidecar user writes what a sidecar writes, each kind with the commands of that kind', async () => {
    const id = newId();
    await expect(sidecarClient.set(redisKeys.grantUsed(id), '1', 'PX', 10_000, 'NX')).resolves.toBe('OK');
    const window = redisKeys.rateLimit(id, 0);
    await expect(sidecarClient.multi().incr(window).expire(window, 61, 'NX').exec()).resolves.toEqual([
      [null, 1],
      [null, 1],
    ]);
    await sidecarClient.hincrby(redisKeys.keyUsage(id), 'count', 1);
    await sidecarClient.hset(redisKeys.keyUsage(id), 'lastUsed', new Date().toISOString());
    await sidecarClient.zincrby(redisKeys.keyUsageEndpoints(id), 1, 'GET /x');
    await sidecarClient.zremrangebyrank(redisKeys.keyUsageEndpoints(id), 0, -101);
    await sidecarClient.expire(redisKeys.keyUsageEndpoints(id), 60);
    await sidecarClient.hincrby(redisKeys.modelUsageMinutes('ns/m', '2026-01-01'), '1r', 1);
    await sidecarClient.expire(redisKeys.modelUsageMinutes('ns/m', '2026-01-01'), 60);
    await sidecarClient.hset(redisKeys.sidecarModelLoad('m'), 'gw|', '{}');
    await sidecarClient.pexpire(redisKeys.sidecarModelLoad('m'), 30_000);
    await admin.del(
      redisKeys.grantUsed(id),
      window,
      redisKeys.keyUsage(id),
      redisKeys.keyUsageEndpoints(id),
      redisKeys.modelUsageMinutes('ns/m', '2026-01-01'),
      redisKeys.sidecarModelLoad('m'),
    );
  });

  it('the sidecar user appends a refusal report for the gateways', async () => {
    await expect(sidecarClient.rpush('tg:audit:sidecar', '{}')).resolves.toBeGreaterThan(0);
    await admin.del('tg:audit:sidecar');
  });

  it('the operator user rebuilds what it owns: routes, the marker, the channels', async () => {
    const operator = new Redis(url('operator'), { maxRetriesPerRequest: 1 });
    try {
      await operator.set(redisKeys.bdaRoute('wf', 'svc'), 'x');
      await operator.publish(redisChannels.routes, routeChangeTag(redisKeys.bdaRoute('wf', 'svc')));
      expect(await operator.scan('0', 'MATCH', 'tg:route:*')).toEqual([
        '0',
        expect.arrayContaining([redisKeys.bdaRoute('wf', 'svc')]),
      ]);
      await operator.del(redisKeys.bdaRoute('wf', 'svc'));
      // Nothing outside Tollgate's keys, and nothing that would take the server down.
      await expect(operator.set('other:key', 'x')).rejects.toThrow(/NOPERM/);
      await expect(operator.flushall()).rejects.toThrow(/NOPERM/);
      await expect(operator.call('CONFIG', 'SET', 'maxmemory', '1')).rejects.toThrow(/NOPERM/);
    } finally {
      operator.disconnect();
    }
  });

  it.each([
    ['mint a key', (r: Redis) => r.set(redisKeys.apiKey('a'.repeat(64)), '{}')],
    ['delete a key', (r: Redis) => r.del(redisKeys.apiKey('a'.repeat(64)))],
    ['rewrite a route', (r: Redis) => r.set(redisKeys.bdaRoute('wf', 'svc'), '{}')],
    ['clear the marker', (r: Redis) => r.del(redisKeys.indexMarker)],
    ['write the grant keys', (r: Redis) => r.set('tg:grant:keys', '{}')],
    [
      'write through a script',
      (r: Redis) => r.eval("return redis.call('SET', KEYS[1], 'x')", 1, redisKeys.apiKey('b'.repeat(64))),
    ],
    // A script that never ends would hold the single-threaded server: every client answered BUSY.
    ['run a script of its own', (r: Redis) => r.eval('while true do end', 0)],
    ['run a cached script', (r: Redis) => r.evalsha('a'.repeat(40), 0)],
    [
      'load a function',
      (r: Redis) =>
        r.call(
          'FUNCTION',
          'LOAD',
          "#!lua name=x\nredis.register_function('x', function() while true do end end)",
        ),
    ],
    ['call a function', (r: Redis) => r.call('FCALL', 'x', '0')],
    // It may add a report of a refusal for the gateways, never read, take or drop others' reports.
    ['read the sidecars’ reports', (r: Redis) => r.lrange('tg:audit:sidecar', 0, -1)],
    ['take the sidecars’ reports', (r: Redis) => r.lpop('tg:audit:sidecar')],
    ['drop the sidecars’ reports', (r: Redis) => r.ltrim('tg:audit:sidecar', 0, 0)],
    ['replace the sidecars’ reports', (r: Redis) => r.set('tg:audit:sidecar', 'x')],
    ['expire the sidecars’ reports', (r: Redis) => r.expire('tg:audit:sidecar', 1)],
    ['write the audit backlog', (r: Redis) => r.rpush('tg:audit:backlog', '{}')],
    ['announce a change', (r: Redis) => r.publish(redisChannels.keys, 'x')],
    ['wake a model', (r: Redis) => r.publish(redisChannels.modelWake, '{}')],
    ['list every key', (r: Redis) => r.keys('*')],
    ['scan the key space', (r: Redis) => r.scan('0')],
    ['flush everything', (r: Redis) => r.flushall()],
    ['reconfigure the server', (r: Redis) => r.call('CONFIG', 'SET', 'maxmemory', '1')],
    ['read the users', (r: Redis) => r.call('ACL', 'LIST')],
    ['write outside Tollgate', (r: Redis) => r.set('other', 'x')],
    // Each kind of counter takes only its own commands: none can be set back or change its type.
    ['set a rate-limit window back', (r: Redis) => r.set(redisKeys.rateLimit('a', 0), '0')],
    ['turn a usage record into a string', (r: Redis) => r.set(redisKeys.keyUsage('a'), 'x')],
    ['replace a model’s load reports', (r: Redis) => r.set(redisKeys.sidecarModelLoad('m'), 'x')],
    ['count into a load report', (r: Redis) => r.incr(redisKeys.sidecarModelLoad('m'))],
    // What it may write it may also erase (PEXPIRE 0, HSET over a field): so the central gateways'
    // reports, which scale every model, are where it writes nothing.
    ['erase the central gateways’ load reports', (r: Redis) => r.pexpire(redisKeys.modelLoad('m'), 0)],
    [
      'overwrite a central gateway’s load report',
      (r: Redis) => r.hset(redisKeys.modelLoad('m'), 'gw|', '{}'),
    ],
    ['write a hash over a rate-limit window', (r: Redis) => r.hset(redisKeys.rateLimit('a', 0), 'f', '1')],
    // Per-minute figures are counted, never set: a value there is an integer, never megabytes.
    [
      'set a per-minute usage figure',
      (r: Redis) => r.hset(redisKeys.keyUsageMinutes('0123456789abcdef0123', '2026-01-01'), '1r', 'x'),
    ],
    [
      'set a usage record other than a key’s own',
      (r: Redis) => r.hset(`${redisKeys.keyUsage('0123456789abcdef0123')}:x`, 'lastUsed', 'x'),
    ],
    ['count a spent grant', (r: Redis) => r.incr(redisKeys.grantUsed('a'))],
  ])('the sidecar user cannot %s', async (_what, act) => {
    await expect(act(sidecarClient)).rejects.toThrow(/NOPERM/);
  });

  it('the sidecar user listens for key and route changes only where they come as tags, not on the channels that named them', async () => {
    const listener = new Redis(url('sidecar'), { maxRetriesPerRequest: 1 });
    try {
      // A sidecar of an earlier version, not restarted since the upgrade: refused, so it never
      // takes its cache for live and asks Redis on every call.
      await expect(listener.subscribe('tg:events:keys')).rejects.toThrow(/NOPERM/);
      await expect(listener.subscribe('tg:events:routes')).rejects.toThrow(/NOPERM/);
      await expect(listener.subscribe(redisChannels.keys)).resolves.toBe(1);
      await expect(listener.subscribe(redisChannels.routes)).resolves.toBe(2);
    } finally {
      listener.disconnect();
    }
  });

  it('nobody gets in without a password once the default user is off', async () => {
    await admin.call('ACL', 'SETUSER', 'default', 'off');
    const anonymous = new Redis(url('sidecar').replace(/tollgate-sidecar:[^@]+@/, ''), {
      maxRetriesPerRequest: 0,
      lazyConnect: true,
      enableReadyCheck: false,
    });
    try {
      await anonymous.connect().catch(() => undefined);
      await expect(anonymous.get('tg:index:built')).rejects.toThrow(/NOAUTH|Authentication|closed|connect/i);
    } finally {
      anonymous.disconnect();
      await admin.call('ACL', 'SETUSER', 'default', 'on');
    }
  });
});
