import { jest } from '@jest/globals';
import { unusedAudit } from '../../harness/audit.js';
import { waitUntil } from '../../harness/wait.js';
import { webhookDeps } from './webhook-deps.js';
import { dirWebhookStore, kubeWebhookStore } from '../../../gateway/webhooks/store.js';
import { putWorkflowRoute } from '../workflow-route.js';
import { readdir, readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { OffboardedUsers } from '../../../gateway/auth/offboarded-users.js';
import { ManifestWorkflowRecords } from '../../../common/routes/workflow-records.js';
import { WORKFLOW_PLURAL, workflowResourceName, workflowSchema } from '../../../common/resources/workflow.js';
import express from 'express';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { scanningService } from './scanner.js';
import { readKeyGrant } from '../../../common/apikey/index-reader.js';
import { LeakReporterKeys } from '../../../gateway/auth/leak-reporter-keys.js';
import type { ManagementDeps } from '../../../gateway/api/deps.js';
import { importJWK, SignJWT, type JWK } from 'jose';
import { Redis } from 'ioredis';
import { DirApiKeyStore } from '../../../common/apikey/dir-store.js';
import { dirIdentityStore, kubeIdentityStore, type IdentityStore } from '../../../common/identity/store.js';
import { generateKey, hashKey, keyStart, parseKey } from '../../../common/apikey/format.js';
import { apiKeyId, newApiKey, newKeyId } from '../../../common/resources/apikey.js';
import { keyGrantOf } from '../../../gateway/api/key-grant.js';
import { KeyIndexWriter } from '../../../common/apikey/index-writer.js';
import { RoleCatalogue } from '../../../common/apikey/roles.js';
import type { ApiKeyStore } from '../../../common/apikey/store.js';
import { createLogger } from '../../../common/logger.js';
import { keyChangeTag, redisChannels, redisKeys } from '../../../common/redis/schema.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { createManagementRouter } from '../../../gateway/api/router.js';
import { REPORT_BUDGET } from '../../../gateway/api/routes/report-leaked-keys.js';
import { DirModelStore } from '../../../gateway/platform/models/dir-store.js';
import { LOCAL_AUDIENCE, LOCAL_ISSUER, LocalIssuer } from '../../../gateway/auth/local-issuer.js';
import { createTokenVerifier } from '../../../gateway/auth/oidc.js';
import { redis } from '../../harness/index.js';
import {
  closeKeyStores,
  freshNamespace,
  kubeKeyStore,
  kubeWithApiKeys,
  loopbackIdentityProvider,
  removeTempDirs,
  tempDir,
} from './fixtures.js';
import { testSealer, testVerifier, readSealed } from '../signing.js';
import { aWorkflow } from '../../builders/resources.js';

afterAll(removeTempDirs);
afterAll(closeKeyStores);

const log = createLogger('management-api-test', 'silent');
const clientOptions = {
  maxRetriesPerRequest: 0,
  enableOfflineQueue: false,
  retryStrategy: () => 50,
} as const;

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

interface KeyJson {
  id: string;
  key?: string;
  start: string;
  module: string;
  roles: string[];
  name?: string;
  createdAt: string;
  lastUsed?: string;
  requestCount: number;
  expiresAt?: string;
  rateLimit?: { requests: number; windowSeconds: number };
}

const adminPolicy = { groupsClaim: 'groups', adminGroups: ['tollgate-admins', 'platform-ops'] };

const stores: Array<
  [
    string,
    (dir: string) => Promise<{
      keys: ApiKeyStore;
      identities: IdentityStore;
      webhooks: (redis: Redis) => Promise<ManagementDeps['webhooks']>;
    }>,
  ]
> = [
  [
    'manifest directory',
    async (dir) => {
      const keys = new DirApiKeyStore(new ManifestDir(dir, () => undefined));
      return {
        keys,
        identities: dirIdentityStore(new ManifestDir(dir, () => undefined)),
        webhooks: (redis: Redis) =>
          webhookDeps(redis, dirWebhookStore(new ManifestDir(dir, () => undefined)), keys),
      };
    },
  ],
  [
    'Kubernetes',
    async () => {
      const { kc } = await kubeWithApiKeys();
      const namespace = await freshNamespace(kc, 'keys-api');
      const keys = kubeKeyStore(kc, namespace);
      return {
        keys,
        identities: kubeIdentityStore(kc, namespace),
        webhooks: (redis: Redis) => webhookDeps(redis, kubeWebhookStore(kc, namespace), keys),
      };
    },
  ],
];

describe.each(stores)('management API over HTTP (keys on %s)', (label, openStore) => {
  let idp: Awaited<ReturnType<typeof loopbackIdentityProvider>>;
  let server: Server;
  let base: string;
  let client: Redis;
  let stateDir: string;
  /** The Workflow records (as `tollgate route add` writes them): who owns each workflow. */
  let recordsDir: string;
  const suffix = Math.random().toString(36).slice(2, 8);
  const alice = `alice-${suffix}@example.com`;
  const bob = `bob-${suffix}@example.com`;
  const workflow = `fraud-${suffix}`;
  const bobsWorkflow = `payroll-${suffix}`;
  let aliceToken: string;
  let bobToken: string;
  let store: ApiKeyStore;
  let deps: ManagementDeps;
  let scanner: Awaited<ReturnType<typeof scanningService>>;
  /** Refusals past a share, as the gateway's metric would count them. */
  const shareRefusals: string[] = [];

  beforeAll(async () => {
    idp = await loopbackIdentityProvider();
    const redisUrl = (await redis()).url;
    client = new Redis(redisUrl, clientOptions);
    await new Promise((r) => client.once('ready', r));
    stateDir = await tempDir('tollgate-api-');
    recordsDir = await tempDir('tollgate-records-');
    await putWorkflowRoute(client, { workflow, service: 'scorer', url: 'http://127.0.0.1:9', owner: alice });
    await putWorkflowRoute(client, {
      workflow: bobsWorkflow,
      service: 'pay',
      url: 'http://127.0.0.1:9',
      owner: bob,
    });
    scanner = await scanningService();
    const app = express();
    app.use(
      '/api/v1',
      createManagementRouter(
        (deps = {
          ...(await openStore(stateDir).then(async (s) => ({
            store: (store = s.keys),
            identities: s.identities,
            webhooks: await s.webhooks(client),
          }))),
          index: new KeyIndexWriter(client, await testSealer()),
          sealer: await testSealer(),
          redis: client,
          audit: unusedAudit(),
          maxRollGraceSeconds: 3_600,
          workflows: new WorkflowRoutes(
            client,
            await testVerifier(),
            new ManifestWorkflowRecords(new ManifestDir(recordsDir, () => undefined)),
          ),
          roles: new RoleCatalogue({ resources: ['datasets'] }),
          verifyToken: new OffboardedUsers(client, 0).guard(
            createTokenVerifier(
              { issuer: 'urn:tollgate:standalone', audience: 'tollgate', jwksUrl: idp.jwksUrl },
              adminPolicy,
            ),
          ),
          offboarded: new OffboardedUsers(client, 0),
          admin: adminPolicy,
          // The tests call as fast as they can; pacing is tested on a router of its own.
          callsPerSecond: 100_000,
          models: new DirModelStore(new ManifestDir(stateDir, () => undefined)),
          leakReports: { keys: new LeakReporterKeys(scanner.keysUrl, log), action: 'revoke' },
          findGrant: async (hash) => readKeyGrant(client, await testVerifier(), hash),
          shareRefused: (share, team) => void shareRefusals.push(`${share} ${team}`),
          log,
        }),
      ),
    );
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
    aliceToken = await idp.issuer.mint(alice);
    bobToken = await idp.issuer.mint(bob);
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await scanner.close();
    await idp.close();
    client.disconnect();
  });

  async function call(
    method: string,
    path: string,
    opts: {
      token?: string | null;
      body?: unknown;
      raw?: string;
      contentType?: string;
      headers?: Record<string, string>;
    } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { ...opts.headers };
    const token = opts.token === undefined ? aliceToken : opts.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (opts.raw !== undefined || opts.body !== undefined) {
      body = opts.raw ?? JSON.stringify(opts.body);
      headers['content-type'] = opts.contentType ?? 'application/json';
    }
    const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
    };
  }
  const create = (body: unknown, token?: string) =>
    call('POST', '/apikeys', { body, ...(token === undefined ? {} : { token }) });
  const items = (a: Answer): KeyJson[] => a.body.items as KeyJson[];

  function expectError(a: Answer, status: number, code: string, field?: string): void {
    expect({ status: a.status, code: a.body.code, field: a.body.field }).toEqual({ status, code, field });
    expect(typeof a.body.error).toBe('string');
    expect((a.body.error as string).length).toBeGreaterThan(10);
  }

  describe('authentication', () => {
    it('refuses a request without a token, saying how to authenticate', async () => {
      const a = await call('GET', '/apikeys', { token: null });
      expectError(a, 401, 'missing_token');
      expect(a.headers.get('www-authenticate')).toMatch(/^Bearer realm="tollgate"/);
    });

    it('refuses tokens that are malformed, foreign, for another audience or issuer, or expired', async () => {
      const stranger = await LocalIssuer.open(await tempDir('tollgate-stranger-'));
      const cases: Array<[string, string]> = [
        ['not-a-jwt', 'invalid_token'],
        [await stranger.mint(alice), 'invalid_token'],
        [await idp.issuer.mint(alice, { audience: 'someone-else' }), 'invalid_token'],
        [await idp.issuer.mint(alice, { issuer: 'https://evil.example.com' }), 'invalid_token'],
        [await idp.issuer.mint(alice, { ttlSeconds: -120 }), 'token_expired'],
      ];
      for (const [token, code] of cases) {
        const a = await call('GET', '/apikeys', { token });
        expectError(a, 401, code);
        expect(a.headers.get('www-authenticate')).toContain('error="invalid_token"');
      }
      expectError(
        await fetchWith(`${base}/apikeys`, {
          authorization: `Basic ${Buffer.from('a:b').toString('base64')}`,
        }),
        401,
        'invalid_token',
      );
    });
    it('refuses a validly signed token whose subject is not a non-empty string', async () => {
      const jwk = JSON.parse(await readFile(join(idp.stateDir, 'signing-key.json'), 'utf8')) as JWK & {
        kid: string;
      };
      const key = await importJWK(jwk, 'ES256');
      for (const sub of [42, null, '', ['alice']]) {
        // What an identity provider could sign; jose's JWTPayload type would not let `sub` be these.
        const claims: Record<string, unknown> = { sub };
        const token = await new SignJWT(claims)
          .setProtectedHeader({ alg: 'ES256', kid: jwk.kid })
          .setIssuer(LOCAL_ISSUER)
          .setAudience(LOCAL_AUDIENCE)
          .setExpirationTime('5m')
          .sign(key);
        const a = await call('GET', '/apikeys', { token });
        expectError(a, 401, 'invalid_token');
        expect(a.headers.get('www-authenticate')).toContain('error="invalid_token"');
      }
    });
  });

  describe('create, list, get, delete', () => {
    it('lists the roles each module offers the caller', async () => {
      const a = await call('GET', '/modules');
      expect(a.status).toBe(200);
      const modules = a.body.modules as Array<{
        module: string;
        roles: Array<{ id: string; description: string }>;
      }>;
      const bda = modules.find((m) => m.module === 'bda')?.roles.map((r) => r.id);
      expect(bda).toContain(workflow);
      expect(bda).not.toContain(bobsWorkflow);
      const platform = modules.find((m) => m.module === 'platform')?.roles.map((r) => r.id);
      expect(platform).toEqual(
        expect.arrayContaining([
          'viewer',
          'editor',
          'datasets:viewer',
          'datasets:editor',
          'models:inference',
        ]),
      );
      const bobs = (await call('GET', '/modules', { token: bobToken })).body.modules as typeof modules;
      expect(bobs.find((m) => m.module === 'bda')?.roles.map((r) => r.id)).toEqual([bobsWorkflow]);
    });

    it('creates a platform key, shows it once, and indexes only its hash', async () => {
      const a = await create({
        module: 'platform',
        roles: ['viewer', 'datasets:editor'],
        name: '  Nightly export  ',
        expiresAt: '2031-06-01T12:00:00+02:00',
        rateLimit: { requests: 50, windowSeconds: 10 },
      });
      expect(a.status).toBe(201);
      const created = a.body as unknown as KeyJson;
      const key = created.key ?? '';
      expect(parseKey(key)).toEqual({ module: 'platform' });
      expect(created).toMatchObject({
        start: key.slice(0, 8),
        module: 'platform',
        roles: ['viewer', 'datasets:editor'],
        name: 'Nightly export',
        expiresAt: '2031-06-01T10:00:00.000Z',
        rateLimit: { requests: 50, windowSeconds: 10 },
        requestCount: 0,
      });
      expect(created.id).toMatch(/^[0-9a-f]{20}$/);
      expect(Date.now() - Date.parse(created.createdAt)).toBeLessThan(60_000);
      expect(a.body).not.toHaveProperty('hash');
      expect(a.headers.get('location')).toBe(`/api/v1/apikeys/${created.id}`);
      expect(a.headers.get('cache-control')).toBe('no-store');

      expect(await readSealed(client, redisKeys.apiKey(hashKey(key)))).toEqual({
        id: created.id,
        owner: alice,
        module: 'platform',
        roles: ['viewer', 'datasets:editor'],
        name: 'Nightly export',
        expiresAt: '2031-06-01T10:00:00.000Z',
        rateLimit: { requests: 50, windowSeconds: 10 },
      });

      // The key value is in no later answer and nowhere on disk.
      const got = await call('GET', `/apikeys/${created.id}`);
      expect(got.status).toBe(200);
      expect(got.body).toEqual({ ...created, key: undefined });
      expect(JSON.stringify(got.body)).not.toContain(key.slice(8));
      expect(JSON.stringify((await call('GET', '/apikeys')).body)).not.toContain(key.slice(8));
      if (label === 'manifest directory') {
        const files = await readdir(join(stateDir, 'apikeys'));
        const texts = await Promise.all(files.map((f) => readFile(join(stateDir, 'apikeys', f), 'utf8')));
        expect(texts.join('\n')).toContain(hashKey(key));
        expect(texts.join('\n')).not.toContain(key.slice(8));
      }
    });

    it('creates a bda key only for a workflow the caller owns', async () => {
      const a = await create({ module: 'bda', roles: [workflow] });
      expect(a.status).toBe(201);
      expect(parseKey(a.body.key as string)).toEqual({ module: 'bda' });
      expect(a.body.roles).toEqual([workflow]);
      expectError(await create({ module: 'bda', roles: [bobsWorkflow] }), 400, 'unknown_workflow', 'roles');
      expectError(
        await create({ module: 'bda', roles: ['no-such-workflow'] }),
        400,
        'unknown_workflow',
        'roles',
      );
      expectError(
        await create({ module: 'bda', roles: [workflow, workflow + 'x'] }),
        400,
        'invalid_field',
        'roles',
      );
      expectError(await create({ module: 'bda', roles: ['viewer'] }), 400, 'unknown_workflow', 'roles');
      expectError(await create({ module: 'platform', roles: [workflow] }), 400, 'unknown_role', 'roles');
    });

    it('lists the caller’s keys with search, module filter and pages, and last use from Redis', async () => {
      const owner = `carol-${suffix}`;
      const token = await idp.issuer.mint(owner);
      const made: KeyJson[] = [];
      for (const [i, roles] of [
        ['viewer'],
        ['datasets:viewer'],
        ['editor'],
        ['models:inference'],
        ['viewer'],
      ].entries()) {
        const a = await create(
          { module: 'platform', roles, name: i === 2 ? 'Deploy BOT' : `key ${i}` },
          token,
        );
        expect(a.status).toBe(201);
        made.push(a.body as unknown as KeyJson);
      }
      const list = (query: string) => call('GET', `/apikeys${query}`, { token });

      const all = items(await list(''));
      expect(all.map((k) => k.id).sort()).toEqual(made.map((k) => k.id).sort());
      expect(all.every((k) => k.key === undefined && !('hash' in k))).toBe(true);

      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await list(
          `?limit=2${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
        );
        expect(page.status).toBe(200);
        expect(items(page).length).toBeLessThanOrEqual(2);
        seen.push(...items(page).map((k) => k.id));
        cursor = page.body.nextCursor as string | undefined;
      } while (cursor !== undefined);
      expect(seen).toEqual(all.map((k) => k.id));

      expect(items(await list('?search=deploy%20bot')).map((k) => k.name)).toEqual(['Deploy BOT']);
      expect(items(await list('?search=datasets')).map((k) => k.roles)).toEqual([['datasets:viewer']]);
      expect(items(await list(`?search=${made[3]?.start ?? ''}`)).map((k) => k.id)).toContain(made[3]?.id);
      expect(items(await list('?module=bda'))).toEqual([]);
      expect(items(await list('?module=platform&search=viewer'))).toHaveLength(3);

      const lastUsed = new Date(Date.now() - 5_000).toISOString();
      await client.hset(redisKeys.keyUsage(made[0]?.id ?? ''), { lastUsed, count: 42 });
      const used = items(await list('')).find((k) => k.id === made[0]?.id);
      expect(used).toMatchObject({ lastUsed, requestCount: 42 });
      expect(items(await list('')).find((k) => k.id === made[1]?.id)?.lastUsed).toBeUndefined();
    });

    it('deletes a key: the index entry goes, every replica is told, and the key is gone', async () => {
      const created = (await create({ module: 'platform', roles: ['viewer'] })).body as unknown as KeyJson;
      const hash = hashKey(created.key ?? '');
      const sub = new Redis((await redis()).url);
      const messages: string[] = [];
      sub.on('message', (_c: string, m: string) => messages.push(m));
      await sub.subscribe(redisChannels.keys);
      try {
        const a = await call('DELETE', `/apikeys/${created.id}`);
        expect(a.status).toBe(204);
        expect(await client.exists(redisKeys.apiKey(hash))).toBe(0);
        const deadline = Date.now() + 2_000;
        const tag = keyChangeTag(hash);
        while (!messages.includes(tag) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        expect(messages).toContain(tag);
        expectError(await call('GET', `/apikeys/${created.id}`), 404, 'key_not_found');
        expectError(await call('DELETE', `/apikeys/${created.id}`), 404, 'key_not_found');
        expect(items(await call('GET', '/apikeys')).map((k) => k.id)).not.toContain(created.id);
      } finally {
        sub.disconnect();
      }
    });
  });

  describe('isolation between users', () => {
    it('shows another user’s key as not found, and never deletes it', async () => {
      const created = (await create({ module: 'platform', roles: ['editor'], name: 'alice only' }))
        .body as unknown as KeyJson;
      const hash = hashKey(created.key ?? '');
      const notFound = await call('GET', `/apikeys/${created.id}`, { token: bobToken });
      expectError(notFound, 404, 'key_not_found');
      // Exactly the answer for an id that does not exist at all.
      const missing = await call('GET', `/apikeys/${'0'.repeat(20)}`, { token: bobToken });
      expect(missing.body).toEqual({
        ...notFound.body,
        error: (notFound.body.error as string).replace(created.id, '0'.repeat(20)),
      });
      expectError(await call('DELETE', `/apikeys/${created.id}`, { token: bobToken }), 404, 'key_not_found');
      expect(await client.exists(redisKeys.apiKey(hash))).toBe(1);
      expect((await call('GET', `/apikeys/${created.id}`)).status).toBe(200);
      const bobsList = items(await call('GET', '/apikeys?search=alice', { token: bobToken }));
      expect(bobsList.map((k) => k.id)).not.toContain(created.id);
      expect(
        items(await call('GET', '/apikeys', { token: bobToken })).every((k) => k.id !== created.id),
      ).toBe(true);
    });
  });

  describe('invalid input: 400 with the code and the field at fault', () => {
    const cases: Array<[string, unknown, string, string]> = [
      ['no module', { roles: ['viewer'] }, 'invalid_field', 'module'],
      ['unknown module', { module: 'admin', roles: ['viewer'] }, 'invalid_field', 'module'],
      ['no roles', { module: 'platform' }, 'invalid_field', 'roles'],
      ['empty roles', { module: 'platform', roles: [] }, 'invalid_field', 'roles'],
      ['roles not an array', { module: 'platform', roles: 'viewer' }, 'invalid_field', 'roles'],
      ['an empty role', { module: 'platform', roles: [''] }, 'invalid_field', 'roles'],
      ['a role that is not a string', { module: 'platform', roles: [7] }, 'invalid_field', 'roles'],
      ['a duplicated role', { module: 'platform', roles: ['viewer', 'viewer'] }, 'invalid_field', 'roles'],
      ['an unknown role', { module: 'platform', roles: ['viewer', 'root'] }, 'unknown_role', 'roles'],
      [
        'too many roles',
        { module: 'platform', roles: Array.from({ length: 33 }, (_, i) => `r${i}`) },
        'invalid_field',
        'roles',
      ],
      ['a blank name', { module: 'platform', roles: ['viewer'], name: '   ' }, 'invalid_field', 'name'],
      [
        'a long name',
        { module: 'platform', roles: ['viewer'], name: 'x'.repeat(101) },
        'invalid_field',
        'name',
      ],
      [
        'a name with control characters',
        { module: 'platform', roles: ['viewer'], name: 'a\u0000b' },
        'invalid_field',
        'name',
      ],
      [
        'a name that is not a string',
        { module: 'platform', roles: ['viewer'], name: 5 },
        'invalid_field',
        'name',
      ],
      [
        'an expiry that is not a date',
        { module: 'platform', roles: ['viewer'], expiresAt: 'tomorrow' },
        'invalid_field',
        'expiresAt',
      ],
      [
        'an expiry without a time zone',
        { module: 'platform', roles: ['viewer'], expiresAt: '2031-01-01T00:00:00' },
        'invalid_field',
        'expiresAt',
      ],
      [
        'an expiry past the year 9999 once in UTC',
        { module: 'platform', roles: ['viewer'], expiresAt: '9999-12-31T23:59:59-12:00' },
        'invalid_field',
        'expiresAt',
      ],
      [
        'an expiry in the past',
        { module: 'platform', roles: ['viewer'], expiresAt: '2020-01-01T00:00:00Z' },
        'expiry_in_past',
        'expiresAt',
      ],
      [
        'a zero rate limit',
        { module: 'platform', roles: ['viewer'], rateLimit: { requests: 0, windowSeconds: 1 } },
        'invalid_field',
        'rateLimit.requests',
      ],
      [
        'a fractional rate limit',
        { module: 'platform', roles: ['viewer'], rateLimit: { requests: 1.5, windowSeconds: 1 } },
        'invalid_field',
        'rateLimit.requests',
      ],
      [
        'a rate limit without a window',
        { module: 'platform', roles: ['viewer'], rateLimit: { requests: 5 } },
        'invalid_field',
        'rateLimit.windowSeconds',
      ],
      [
        'a rate limit window over a day',
        { module: 'platform', roles: ['viewer'], rateLimit: { requests: 5, windowSeconds: 86_401 } },
        'invalid_field',
        'rateLimit.windowSeconds',
      ],
      [
        'an unknown rate limit field',
        { module: 'platform', roles: ['viewer'], rateLimit: { requests: 5, windowSeconds: 1, burst: 2 } },
        'unknown_field',
        'rateLimit.burst',
      ],
      ['an unknown field', { module: 'platform', roles: ['viewer'], owner: 'bob' }, 'unknown_field', 'owner'],
      ['a body that is an array', [{ module: 'platform', roles: ['viewer'] }], 'invalid_field', 'body'],
    ];
    it.each(cases)('refuses %s', async (_what, body, code, field) => {
      const before = items(await call('GET', '/apikeys?limit=200')).length;
      expectError(await create(body), 400, code, field);
      expect(items(await call('GET', '/apikeys?limit=200'))).toHaveLength(before);
    });

    it('refuses bodies that are not JSON, not declared as JSON, or too large', async () => {
      expectError(
        await call('POST', '/apikeys', { raw: '{"module": "platform",' }),
        400,
        'invalid_json',
        'body',
      );
      expectError(
        await call('POST', '/apikeys', {
          raw: 'module=platform',
          contentType: 'application/x-www-form-urlencoded',
        }),
        415,
        'unsupported_media_type',
      );
      expectError(await call('POST', '/apikeys', { raw: '"platform"' }), 400, 'invalid_json', 'body');
      // The body's charset and compression: a specific answer, never the gateway's 500.
      const key = '{"module": "platform", "roles": ["viewer"]}';
      const latin1 = await call('POST', '/apikeys', {
        raw: key,
        contentType: 'application/json; charset=iso-8859-1',
      });
      expectError(latin1, 415, 'unsupported_media_type');
      expect(latin1.body.error).toContain('UTF-8');
      const compress = await call('POST', '/apikeys', {
        raw: key,
        headers: { 'content-encoding': 'compress' },
      });
      expectError(compress, 415, 'unsupported_media_type');
      expect(compress.body.error).toContain('Content-Encoding');
      const notGzip = await call('POST', '/apikeys', { raw: key, headers: { 'content-encoding': 'gzip' } });
      expectError(notGzip, 400, 'bad_request');
      expect(notGzip.body.error).toMatch(/^the request body could not be read: /);
      expectError(await call('POST', '/apikeys'), 415, 'unsupported_media_type');
      expectError(
        await create({ module: 'platform', roles: ['viewer'], name: 'x'.repeat(20_000) }),
        413,
        'body_too_large',
      );
    });

    it('refuses bad list queries and key ids', async () => {
      expectError(await call('GET', '/apikeys?limit=0'), 400, 'invalid_field', 'limit');
      expectError(await call('GET', '/apikeys?limit=201'), 400, 'invalid_field', 'limit');
      expectError(await call('GET', '/apikeys?limit=ten'), 400, 'invalid_field', 'limit');
      expectError(await call('GET', '/apikeys?limit=2.5'), 400, 'invalid_field', 'limit');
      expectError(await call('GET', '/apikeys?module=admin'), 400, 'invalid_field', 'module');
      expectError(await call('GET', '/apikeys?module=bda&module=platform'), 400, 'invalid_field', 'module');
      expectError(await call('GET', `/apikeys?search=${'x'.repeat(201)}`), 400, 'invalid_field', 'search');
      expectError(await call('GET', '/apikeys?q=nightly'), 400, 'unknown_field', 'q');
      expectError(await call('GET', '/apikeys?cursor=bm90IG91cnM'), 400, 'invalid_cursor', 'cursor');
      expectError(await call('GET', '/apikeys/KEY-1'), 400, 'invalid_field', 'id');
      expectError(await call('DELETE', '/apikeys/..%2F..%2Fetc'), 400, 'invalid_field', 'id');
    });

    it('answers 405 with Allow for other methods and 404 for unknown endpoints', async () => {
      const put = await call('PUT', '/apikeys', { body: {} });
      expectError(put, 405, 'method_not_allowed');
      expect(put.headers.get('allow')).toBe('GET, POST');
      const patch = await call('PATCH', `/apikeys/${'a'.repeat(20)}`, { body: {} });
      expectError(patch, 405, 'method_not_allowed');
      expect(patch.headers.get('allow')).toBe('GET, DELETE');
      expectError(await call('GET', '/secrets'), 404, 'unknown_endpoint');
    });
  });

  describe('workflows come from their records', () => {
    const record = (id: string, owner: string) =>
      new ManifestDir(recordsDir, () => undefined)
        .collection(WORKFLOW_PLURAL, workflowSchema)
        .put(aWorkflow(id, owner, ['team-a'], { name: workflowResourceName(id) }));
    const drop = (id: string) =>
      new ManifestDir(recordsDir, () => undefined)
        .collection(WORKFLOW_PLURAL, workflowSchema)
        .delete(workflowResourceName(id));

    it('offers, and makes keys for, a workflow its record names the caller the owner of, routed or not', async () => {
      const fresh = `fresh-${suffix}`;
      await record(fresh, alice);
      const modules = await call('GET', '/modules');
      const bda = (modules.body.modules as Array<{ module: string; roles: Array<{ id: string }> }>).find(
        (m) => m.module === 'bda',
      );
      expect(bda?.roles.map((r) => r.id)).toContain(fresh);
      expect((await create({ module: 'bda', roles: [fresh] })).status).toBe(201);
      // bob is not offered it, and cannot make a key for it.
      expect((await create({ module: 'bda', roles: [fresh] }, bobToken)).status).toBe(400);
      await drop(fresh);
    });

    it('the record decides over the routes: a workflow handed to bob is no longer alice’s', async () => {
      const existing = await create({ module: 'bda', roles: [workflow] });
      expect(existing.status).toBe(201);
      await record(workflow, bob);
      try {
        const refused = await create({ module: 'bda', roles: [workflow] });
        expect([refused.status, refused.body.code]).toEqual([400, 'unknown_workflow']);
        const roll = await call('POST', `/apikeys/${existing.body.id as string}/roll`, { body: {} });
        expect([roll.status, roll.body.code]).toEqual([403, 'workflow_not_owned']);
        expect((await create({ module: 'bda', roles: [workflow] }, bobToken)).status).toBe(201);
      } finally {
        await drop(workflow);
      }
      expect((await create({ module: 'bda', roles: [workflow] })).status).toBe(201);
    });
  });

  describe('rolling', () => {
    it('refuses to roll a bda key of a workflow that has since changed hands', async () => {
      const handed = `handed-${suffix}`;
      await putWorkflowRoute(client, {
        workflow: handed,
        service: 's',
        url: 'http://127.0.0.1:9',
        owner: alice,
      });
      const created = await create({ module: 'bda', roles: [handed] });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      await putWorkflowRoute(client, {
        workflow: handed,
        service: 's',
        url: 'http://127.0.0.1:9',
        owner: bob,
      });
      const refused = await call('POST', `/apikeys/${id}/roll`, { body: { gracePeriodSeconds: 30 } });
      expect([refused.status, refused.body.code]).toEqual([403, 'workflow_not_owned']);
      expect(refused.body.error).toMatch(/cannot be rolled; delete it/);
      // Nothing was made: the key is as it was.
      expect((await call('GET', `/apikeys/${id}`)).body).toMatchObject({ state: 'active' });
      // Handed back, the same key rolls.
      await putWorkflowRoute(client, {
        workflow: handed,
        service: 's',
        url: 'http://127.0.0.1:9',
        owner: alice,
      });
      expect((await call('POST', `/apikeys/${id}/roll`, { body: {} })).status).toBe(201);
    });

    it('links the two resources; the old one gains spec.rolled and may change in nothing else', async () => {
      const created = await create({
        module: 'platform',
        roles: ['viewer'],
        name: 'to roll',
        allowedCidrs: ['192.0.2.0/24'],
      });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      const rolled = await call('POST', `/apikeys/${id}/roll`, { body: { gracePeriodSeconds: 30 } });
      expect(rolled.status).toBe(201);
      const newId = rolled.body.id as string;
      expect((await call('GET', `/apikeys/${id}`)).body).toMatchObject({
        state: 'rolled',
        rolled: { to: newId },
      });
      expect((await call('GET', `/apikeys/${newId}`)).body).toMatchObject({
        state: 'active',
        rolledFrom: id,
        name: 'to roll',
        allowedCidrs: ['192.0.2.0/24'],
      });
      // The old key's index entry stops at the end of the grace period, and says it was rolled.
      const entry = ((await readSealed(client, redisKeys.apiKey(hashKey(created.body.key as string)))) ??
        {}) as { expiresAt?: string; rolledTo?: string; allowedCidrs?: string[] };
      const old = await store.get(alice, id);
      expect(entry).toMatchObject({
        expiresAt: old?.spec.rolled?.graceEndsAt,
        rolledTo: newId,
        allowedCidrs: ['192.0.2.0/24'],
      });
      if (label === 'Kubernetes' && old !== undefined) {
        // The CRD's rules hold for kubectl and GitOps tools too, not only for this API.
        await expect(store.update({ ...old, spec: { ...old.spec, name: 'renamed' } })).rejects.toThrow(
          /immutable/,
        );
        const other = { ...old.spec.rolled!, graceEndsAt: new Date(Date.now() + 86_400_000).toISOString() };
        await expect(store.update({ ...old, spec: { ...old.spec, rolled: other } })).rejects.toThrow(
          /set once/,
        );
        const fresh = await store.get(alice, newId);
        await expect(
          store.update({ ...fresh!, spec: { ...fresh!.spec, allowedCidrs: ['not-a-cidr'] } }),
        ).rejects.toThrow(/CIDR|immutable/);
      }
    });
  });

  describe('keys limited to models', () => {
    it('keeps the models on the key, its index entry and its roll', async () => {
      const models = ['model-iris', 'model-fraud-*'];
      const created = await create({ module: 'platform', roles: ['models:inference'], models });
      expect(created.status).toBe(201);
      expect(created.body.models).toEqual(models);
      const id = created.body.id as string;
      expect((await call('GET', `/apikeys/${id}`)).body.models).toEqual(models);
      expect(await readSealed(client, redisKeys.apiKey(hashKey(created.body.key as string)))).toMatchObject({
        models,
      });
      const rolled = await call('POST', `/apikeys/${id}/roll`, { body: { gracePeriodSeconds: 0 } });
      expect([rolled.status, rolled.body.models]).toEqual([201, models]);
      // A key without a scope shows none: any model its roles allow.
      const open = await create({ module: 'platform', roles: ['models:inference'] });
      expect(open.body.models).toBeUndefined();
    });

    it('refuses models on a bda key, and entries that are no name or pattern, saying what to send', async () => {
      const bda = await create({ module: 'bda', roles: ['fraud'], models: ['model-iris'] });
      expectError(bda, 400, 'invalid_field', 'models');
      expect(bda.body.error).toMatch(/only a platform key is limited to models/);
      for (const models of [['Model_Iris'], ['model iris'], [], ['model-a', 'model-a'], [7], 'model-iris']) {
        const refused = await create({ module: 'platform', roles: ['models:inference'], models });
        expectError(refused, 400, 'invalid_field', 'models');
      }
      const tooMany = Array.from({ length: 33 }, (_, i) => `model-${i}`);
      expectError(
        await create({ module: 'platform', roles: ['models:inference'], models: tooMany }),
        400,
        'invalid_field',
        'models',
      );
      if (label === 'Kubernetes') {
        // The CRD holds the rule for kubectl and GitOps tools too.
        const key = generateKey('bda');
        await expect(
          store.create(
            newApiKey(newKeyId(), {
              hash: hashKey(key),
              start: keyStart(key),
              module: 'bda',
              roles: ['fraud'],
              owner: alice,
              models: ['model-iris'],
            }),
          ),
        ).rejects.toThrow(/platform key/);
      }
    });
  });

  describe('leaked-key reports', () => {
    // The budget tests hold bodies on sockets that the machine gets to as it can: on a loaded CI
    // runner a body may not have reached the gateway (or been read) within the wait, so a failed
    // try is run once more from the start; a budget that does not hold fails both.
    jest.retryTimes(1, { logErrorsBeforeRetry: true });
    const report = (matches: unknown, sign = scanner.sign, keyId = scanner.keyId) => {
      const raw = typeof matches === 'string' ? matches : JSON.stringify(matches);
      return fetch(`${base}/leaked-keys`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'github-public-key-identifier': keyId,
          'github-public-key-signature': sign(Buffer.from(raw)),
        },
        body: raw,
      }).then(async (res) => ({ status: res.status, text: await res.text() }));
    };
    const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

    it('revokes a real key the scanning service found, and labels every token by its hash', async () => {
      const made = await create({ module: 'platform', roles: ['viewer'], name: 'pushed by mistake' });
      const key = made.body.key as string;
      const unknown = generateKey('platform');
      const answer = await report([
        {
          token: key,
          type: 'tollgate_platform_key',
          url: 'https://example.com/repo/blob/main/.env',
          source: 'content',
        },
        { token: unknown, type: 'tollgate_platform_key', url: 'https://example.com/a', source: 'content' },
        { token: 'tgp_not-a-key', type: 'tollgate_platform_key', url: '', source: 'commit' },
      ]);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text)).toEqual([
        { token_hash: sha256(key), token_type: 'tollgate_platform_key', label: 'true_positive' },
        { token_hash: sha256(unknown), token_type: 'tollgate_platform_key', label: 'false_positive' },
        { token_hash: sha256('tgp_not-a-key'), token_type: 'tollgate_platform_key', label: 'false_positive' },
      ]);
      // Never a key in the answer.
      expect(answer.text).not.toContain(key);
      // Revoked at once: the index entry and the resource are gone.
      expect(await client.exists(redisKeys.apiKey(hashKey(key)))).toBe(0);
      expectError(await call('GET', `/apikeys/${made.body.id as string}`), 404, 'key_not_found');
      // The same report again: no longer a live key.
      const again = await report([{ token: key, type: 't', url: '', source: 'content' }]);
      expect(JSON.parse(again.text)).toEqual([
        { token_hash: sha256(key), token_type: 't', label: 'false_positive' },
      ]);
    });

    it('only records and answers a true report when the setting says report', async () => {
      const made = await create({ module: 'bda', roles: [workflow] });
      const key = made.body.key as string;
      deps.leakReports.action = 'report';
      try {
        const answer = await report([
          { token: key, type: 't', url: 'https://example.com/x', source: 'content' },
        ]);
        expect(JSON.parse(answer.text)).toEqual([
          { token_hash: sha256(key), token_type: 't', label: 'true_positive' },
        ]);
      } finally {
        deps.leakReports.action = 'revoke';
      }
      expect(await client.exists(redisKeys.apiKey(hashKey(key)))).toBe(1);
      expect((await call('GET', `/apikeys/${made.body.id as string}`)).status).toBe(200);
    });

    it('believes no report without the service’s signature, and revokes nothing for it', async () => {
      const made = await create({ module: 'platform', roles: ['viewer'] });
      const key = made.body.key as string;
      const matches = [{ token: key, type: 't', url: '', source: 'content' }];
      const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const forged = (body: Buffer) => sign('sha256', body, other.privateKey).toString('base64');
      for (const attempt of [
        await report(matches, forged),
        await report(matches, scanner.sign, 'no-such-key-id'),
        await report(matches, () => ''),
        await report(matches, () => 'bm90IGEgc2lnbmF0dXJl'),
      ]) {
        expect([attempt.status, JSON.parse(attempt.text).code]).toEqual([401, 'invalid_report_signature']);
      }
      // A signature over other bytes does not carry over to these.
      const signedElse = scanner.sign(Buffer.from('[]'));
      expect((await report(matches, () => signedElse)).status).toBe(401);
      expect(await client.exists(redisKeys.apiKey(hashKey(key)))).toBe(1);
    });

    it('refuses an unsigned report before reading its body, and a signed one past 1 MiB', async () => {
      const big = `[${'"x",'.repeat(400_000)}"x"]`;
      const unsigned = await fetch(`${base}/leaked-keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: big,
      });
      expect([unsigned.status, ((await unsigned.json()) as { code: string }).code]).toEqual([
        401,
        'invalid_report_signature',
      ]);
      const tooBig = await report(big);
      expect([tooBig.status, JSON.parse(tooBig.text).code]).toEqual([413, 'body_too_large']);
    });

    it('holds what reports being read sent, within a budget per address: bodies that never finish do not lock it', async () => {
      // Signature headers that check nothing, and bodies that never finish: what anyone can send.
      const { port } = new URL(base);
      const stalled: Socket[] = [];
      const stall = (sent: number): void => {
        const socket = connect(Number(port), '127.0.0.1');
        socket.on('error', () => undefined);
        socket.write(
          'POST /api/v1/leaked-keys HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
            'Github-Public-Key-Identifier: x\r\nGithub-Public-Key-Signature: eA==\r\n' +
            `Content-Length: 1048000\r\n\r\n[${' '.repeat(sent - 1)}`,
        );
        stalled.push(socket);
      };
      const probe = () => report([{ token: 'tgp_x', type: 't', url: '', source: 'content' }]);
      // ~220 KB: past what this address has left once two bodies of 1 MB are held.
      const big = Array.from({ length: 900 }, () => ({
        token: 'tgp_x',
        type: 't',
        url: 'x'.repeat(200),
        source: 'c',
      }));
      try {
        // Twenty that sent a byte hold twenty bytes: a report still goes through.
        for (let i = 0; i < 20; i++) stall(1);
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect((await probe()).status).toBe(200);
        // Two that sent most of a report hold this address's share: its next report waits.
        stall(1_000_000);
        stall(1_000_000);

        // Their bytes reach the gateway as the machine gets to them: on a busy one, a report sent
        // meanwhile may still be read whole. What it was answered is in the failure.
        let answered = '';
        await waitUntil(
          'the stalled reports are held',
          async () => {
            const r = await report(big);
            answered = `${r.status} ${r.text.slice(0, 200)}`;
            return r.status === 429;
          },
          { timeoutMs: 30_000 },
        ).catch((err: unknown) => {
          throw new Error(`${String(err)}; last answered: ${answered}`);
        });
        const counted = shareRefusals.length;
        const refused = await report(big);
        expect([refused.status, JSON.parse(refused.text).code]).toEqual([429, 'rate_limited']);
        // Counted as the address's share (an address is no team: its label is "").
        expect(shareRefusals.slice(counted)).toEqual(['leak_report_bytes ']);
        expect(JSON.parse(refused.text).error).toMatch(
          new RegExp(
            `from your address \\(127\\.0\\.0\\.1\\) hold \\d+ bytes, near the ${REPORT_BUDGET.perAddressBytes} one address may`,
          ),
        );
      } finally {
        for (const socket of stalled) socket.destroy();
      }
      // What they held is given back when their clients go.
      await waitUntil('reports read again', async () => (await report(big)).status === 200, {
        timeoutMs: 10_000,
      });
    });

    it('a few addresses trickling bodies that never finish do not keep a real report out: the largest holder is cut for it', async () => {
      const { port } = new URL(base);
      const stalled: Array<{ socket: Socket; closed: () => boolean }> = [];
      const stall = (from: string, sent: number): void => {
        const socket = connect({ port: Number(port), host: '127.0.0.1', localAddress: from });
        let closed = false;
        socket.on('error', () => undefined);
        socket.once('close', () => (closed = true));
        socket.write(
          'POST /api/v1/leaked-keys HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n' +
            'Github-Public-Key-Identifier: x\r\nGithub-Public-Key-Signature: eA==\r\n' +
            `Content-Length: 1048000\r\n\r\n[${' '.repeat(sent - 1)}`,
        );
        stalled.push({ socket, closed: () => closed });
      };
      const big = Array.from({ length: 900 }, () => ({
        token: 'tgp_x',
        type: 't',
        url: 'x'.repeat(200),
        source: 'c',
      }));
      const counted = shareRefusals.length;
      try {
        // Four addresses hold two bodies of 1.047 MB each: nearly all the budget (8 MiB), too much
        // to leave room for the report beside them.
        for (const from of ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']) {
          stall(from, 1_047_000);
          stall(from, 1_047_000);
        }
        // Held once their bytes have come (as the machine gets to them).
        let answered = '';
        await waitUntil(
          'a real report is answered while the budget is held',
          async () => {
            const r = await report(big);
            answered = `${r.status} ${r.text.slice(0, 200)}`;
            return r.status === 200 && stalled.some((s) => s.closed());
          },
          { timeoutMs: 30_000 },
        ).catch((err: unknown) => {
          throw new Error(`${String(err)}; last answered: ${answered}`);
        });
        // One of theirs was cut for it; most are still held.
        expect(stalled.filter((s) => s.closed()).length).toBeLessThanOrEqual(2);
        // Each cut (or report turned away meanwhile) is counted as a refusal of a share.
        expect(shareRefusals.length).toBeGreaterThan(counted);
        expect(new Set(shareRefusals.slice(counted))).toEqual(new Set(['leak_report_bytes ']));
      } finally {
        for (const s of stalled) s.socket.destroy();
      }
    });

    it('refuses a signed body that is no report, saying what to send', async () => {
      const notJson = await report('{not json');
      expect([notJson.status, JSON.parse(notJson.text).code]).toEqual([400, 'invalid_json']);
      for (const body of [{ token: 'x' }, [], [{ type: 'no token' }]]) {
        const bad = await report(body);
        expect([bad.status, JSON.parse(bad.text).code]).toEqual([400, 'invalid_field']);
      }
    });
  });

  describe('identities', () => {
    it('are made, listed, read and deleted by their owner; another user sees none of them', async () => {
      const name = `team-${suffix}`;
      const made = await call('POST', '/identities', {
        body: {
          name,
          displayName: 'Team A',
          limits: [{ name: 'per-day', requests: 500, windowSeconds: 86_400 }],
          credits: { amount: 100, refill: 'monthly' },
        },
      });
      expect(made.status).toBe(201);
      expect(made.headers.get('location')).toBe(`/api/v1/identities/${name}`);
      expect(made.body).toMatchObject({
        name,
        displayName: 'Team A',
        owner: alice,
        keys: 0,
        limits: [{ name: 'per-day', requests: 500, windowSeconds: 86_400 }],
        credits: { amount: 100, spent: 0, remaining: 100, refill: 'monthly' },
      });
      expectError(await call('POST', '/identities', { body: { name } }), 409, 'identity_exists', 'name');
      expectError(
        await call('POST', '/identities', { body: { name: `bob-${suffix}` }, token: bobToken }).then(
          async () => call('POST', '/identities', { body: { name: `bob-${suffix}` } }),
        ),
        409,
        'identity_exists',
        'name',
      );
      expect(items(await call('GET', '/identities')).map((i) => i.name as unknown)).toContain(name);
      expect(
        items(await call('GET', '/identities', { token: bobToken })).map((i) => i.name as unknown),
      ).toEqual([`bob-${suffix}`]);
      expectError(await call('GET', `/identities/${name}`, { token: bobToken }), 404, 'identity_not_found');

      const key = await create({ module: 'platform', roles: ['viewer'], identity: name });
      expect([key.status, key.body.identity]).toEqual([201, name]);
      // Its index entry carries the identity's limits and credits: the hot path reads nothing more.
      const grant = await readKeyGrant(client, await testVerifier(), hashKey(key.body.key as string));
      expect(grant?.identity).toEqual({
        name,
        // Its counters' account: a keyed digest of the name, not the name (which anyone may guess).
        account: expect.stringMatching(/^@[0-9a-f]{24}$/),
        limits: [{ name: 'per-day', requests: 500, windowSeconds: 86_400 }],
        credits: { amount: 100, refill: 'monthly' },
      });
      expectError(
        await create({ module: 'platform', roles: ['viewer'], identity: name }, bobToken),
        404,
        'identity_not_found',
        'identity',
      );
      expectError(
        await create({ module: 'platform', roles: ['viewer'], identity: `none-${suffix}` }),
        404,
        'identity_not_found',
        'identity',
      );
      expectError(await call('DELETE', `/identities/${name}`), 409, 'identity_in_use');
      expectError(
        await call('DELETE', `/identities/${name}`, { token: bobToken }),
        404,
        'identity_not_found',
      );
      expect((await call('DELETE', `/apikeys/${key.body.id as string}`)).status).toBe(204);
      expect((await call('DELETE', `/identities/${name}`)).status).toBe(204);
      expectError(await call('GET', `/identities/${name}`), 404, 'identity_not_found');
    });

    it('holds a user to the most keys one may have; an administrator is not held', async () => {
      const carol = `carol-${suffix}@example.com`;
      const carolToken = await idp.issuer.mint(carol);
      const root = await idp.issuer.mint(`root-cap-${suffix}`, { groups: ['platform-ops'] });
      deps.maxKeysPerOwner = 2;
      try {
        const made = [];
        for (let i = 0; i < 2; i++)
          made.push(await create({ module: 'platform', roles: ['viewer'] }, carolToken));
        expect(made.map((m) => m.status)).toEqual([201, 201]);
        const third = await create({ module: 'platform', roles: ['viewer'] }, carolToken);
        expectError(third, 409, 'too_many_keys');
        expect(third.body.error).toMatch(/you have 2 keys, the most one user may have \(2\); delete keys/);
        for (let i = 0; i < 3; i++)
          expect((await create({ module: 'platform', roles: ['viewer'] }, root)).status).toBe(201);
        // A roll keeps the old key (its grace period, then as a record): it needs room too.
        const roll = await call('POST', `/apikeys/${made[1]!.body.id as string}/roll`, {
          body: { gracePeriodSeconds: 0 },
          token: carolToken,
        });
        expectError(roll, 409, 'too_many_keys');
        // Room again once one is deleted.
        expect(
          (await call('DELETE', `/apikeys/${made[0]!.body.id as string}`, { token: carolToken })).status,
        ).toBe(204);
        expect((await create({ module: 'platform', roles: ['viewer'] }, carolToken)).status).toBe(201);
      } finally {
        delete deps.maxKeysPerOwner;
      }
    });

    it('never lets a key left naming a deleted identity take on another user’s identity of that name', async () => {
      const name = `freed-${suffix}`;
      /** A key of alice's naming the identity, written straight to the store (no API check). */
      const aliceKeyOf = async () => {
        const key = generateKey('platform');
        const spec = { hash: hashKey(key), start: keyStart(key), module: 'platform' as const };
        return store.create(
          newApiKey(newKeyId(), { ...spec, roles: ['viewer'], owner: alice, identity: name }),
        );
      };
      expect((await call('POST', '/identities', { body: { name, credits: { amount: 5 } } })).status).toBe(
        201,
      );
      const account = (await keyGrantOf(deps, await aliceKeyOf())).identity?.account as string;
      // Alice's identity spent 4 of its credits; then her keys go, and it is deleted.
      await client.incrby(redisKeys.creditsSpent(account, 'all'), 4);
      for (const k of await store.keysOfIdentity(alice, name)) await store.delete(alice, apiKeyId(k));
      expect((await call('DELETE', `/identities/${name}`)).status).toBe(204);
      // Made again by alice, it keeps what it spent: deleting it resets no quota.
      const again = await call('POST', '/identities', { body: { name, credits: { amount: 5 } } });
      expect([again.status, again.body.credits]).toEqual([201, { amount: 5, spent: 4, remaining: 1 }]);
      expect((await call('DELETE', `/identities/${name}`)).status).toBe(204);
      // What a delete racing a key's creation on another replica leaves: alice's key names the
      // identity, and it is gone. Then bob makes one by that name.
      const planted = await aliceKeyOf();
      const bobs = await call('POST', '/identities', {
        body: { name, credits: { amount: 100 } },
        token: bobToken,
      });
      // Not alice's key's: bob's identity has no key, nothing spent, and bob may delete it.
      expect([bobs.status, bobs.body.keys, bobs.body.credits]).toEqual([
        201,
        0,
        { amount: 100, spent: 0, remaining: 100 },
      ]);
      // Alice's key stays refused (identity_missing) and never carries bob's limits or credits.
      const entry = await keyGrantOf(deps, planted);
      expect(entry.identity).toEqual({ name, account, missing: true });
      expect((await call('DELETE', `/identities/${name}`, { token: bobToken })).status).toBe(204);
      await store.delete(alice, apiKeyId(planted));
    });

    it('refuses bad names and limits with the field at fault, and administrators’ routes to others', async () => {
      for (const name of ['Team', 'a_b', '-a', 'a'.repeat(64), '']) {
        expectError(await call('POST', '/identities', { body: { name } }), 400, 'invalid_field', 'name');
      }
      expectError(
        await call('POST', '/identities', { body: { name: `x-${suffix}`, credits: { amount: -1 } } }),
        400,
        'invalid_field',
        'credits.amount',
      );
      expectError(
        await call('POST', '/identities', { body: { name: `x-${suffix}`, owner: bob } }),
        400,
        'unknown_field',
        'owner',
      );
      expectError(await call('GET', '/identities/NOT_A_NAME'), 400, 'invalid_field', 'name');
      expectError(
        await call('PUT', `/admin/identities/x-${suffix}/limits`, { body: { credits: null } }),
        403,
        'admin_required',
      );
      expectError(
        await call('POST', `/admin/identities/x-${suffix}/credits`, { body: { add: 1 } }),
        403,
        'admin_required',
      );
    });
  });

  describe('webhooks', () => {
    it('are registered over https, listed, rotated and removed by their owner only', async () => {
      expectError(
        await call('POST', '/webhooks', {
          body: { url: 'http://hooks.example.com/t', events: ['key.revoked'] },
        }),
        400,
        'invalid_field',
        'url',
      );
      const made = await call('POST', '/webhooks', {
        body: {
          url: 'https://hooks.example.com/t',
          events: ['key.revoked', 'key.expiring'],
          expiringDays: 14,
        },
      });
      expect(made.status).toBe(201);
      expect(made.headers.get('cache-control')).toBe('no-store');
      expect(made.body).toMatchObject({
        url: 'https://hooks.example.com/t',
        events: ['key.revoked', 'key.expiring'],
        expiringDays: 14,
        owner: alice,
      });
      const secret = made.body.secret as string;
      expect(secret).toMatch(/^whsec_/);
      const id = made.body.id as string;
      const listed = items(await call('GET', '/webhooks')) as unknown as Array<Record<string, unknown>>;
      expect(listed.map((w) => w.id)).toContain(id);
      expect(JSON.stringify(listed)).not.toContain(secret);
      expect(items(await call('GET', '/webhooks', { token: bobToken }))).toEqual([]);
      expectError(await call('DELETE', `/webhooks/${id}`, { token: bobToken }), 404, 'webhook_not_found');
      expectError(
        await call('POST', `/webhooks/${id}/rotate-secret`, { token: bobToken }),
        404,
        'webhook_not_found',
      );
      const rotated = await call('POST', `/webhooks/${id}/rotate-secret`);
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).toMatch(/^whsec_/);
      expect(rotated.body.secret).not.toBe(secret);
      expect((await call('GET', `/webhooks/${id}/deliveries`)).body).toEqual({ items: [] });
      expectError(await call('GET', '/webhooks/not-an-id/deliveries'), 400, 'invalid_field', 'id');
      expect((await call('DELETE', `/webhooks/${id}`)).status).toBe(204);
      expectError(await call('GET', `/webhooks/${id}/deliveries`), 404, 'webhook_not_found');
    });
  });

  describe('administrators', () => {
    const dave = `dave-${suffix}@example.com`;
    const erin = `erin-${suffix}@example.com`;
    let adminToken: string;
    let daveToken: string;
    let erinToken: string;

    beforeAll(async () => {
      adminToken = await idp.issuer.mint(`root-${suffix}`, { groups: ['staff', 'platform-ops'] });
      daveToken = await idp.issuer.mint(dave, { groups: ['staff', 'tollgate-admins-not'] });
      erinToken = await idp.issuer.mint(erin);
    });

    const indexed = async (key: string) => (await client.exists(redisKeys.apiKey(hashKey(key)))) === 1;

    it('tells the caller who they are and whether they are an administrator', async () => {
      const me = await call('GET', '/me', { token: adminToken });
      expect(me.status).toBe(200);
      expect(me.body).toEqual({
        subject: `root-${suffix}`,
        name: `root-${suffix}`,
        groups: ['staff', 'platform-ops'],
        admin: true,
      });
      expect((await call('GET', '/me', { token: daveToken })).body).toMatchObject({ admin: false });
      expectError(await call('GET', '/me', { token: null }), 401, 'missing_token');
    });

    it('refuses every administrator action to a non-administrator, and keeps others’ keys 404', async () => {
      const daves = await create({ module: 'platform', roles: ['viewer'], name: 'dave’s' }, daveToken);
      const erins = await create({ module: 'platform', roles: ['viewer'], name: 'erin’s' }, erinToken);
      expect([daves.status, erins.status]).toEqual([201, 201]);
      const erinsId = erins.body.id as string;
      for (const a of [
        await call('GET', '/admin/apikeys', { token: daveToken }),
        await call('GET', `/admin/apikeys?owner=${encodeURIComponent(erin)}`, { token: daveToken }),
        await call('DELETE', `/admin/apikeys/${erinsId}`, { token: daveToken }),
        await call('POST', '/admin/offboard', { token: daveToken, body: { owner: erin } }),
      ]) {
        expectError(a, 403, 'admin_required');
        expect(a.body.error).toContain('"groups" claim');
      }
      // What a user sees of another's key is unchanged: nothing.
      expectError(await call('GET', `/apikeys/${erinsId}`, { token: daveToken }), 404, 'key_not_found');
      expectError(await call('DELETE', `/apikeys/${erinsId}`, { token: daveToken }), 404, 'key_not_found');
      expect(await indexed(erins.body.key as string)).toBe(true);
      // An administrator's own listing is still their own.
      expect(items(await call('GET', '/apikeys', { token: adminToken }))).toEqual([]);
    });

    it('overrides a key’s limits for administrators, refusing what is malformed and saying what to fix', async () => {
      const made = await create({
        module: 'platform',
        roles: ['viewer'],
        limits: [{ name: 'burst', requests: 10, windowSeconds: 1 }],
      });
      expect([made.status, made.body.limits]).toEqual([
        201,
        [{ name: 'burst', requests: 10, windowSeconds: 1 }],
      ]);
      const id = made.body.id as string;
      const put = (body: unknown, token = adminToken) =>
        call('PUT', `/admin/apikeys/${id}/limits`, { token, body });
      expectError(await put({ limits: null }, daveToken), 403, 'admin_required');
      expectError(await put({}), 400, 'invalid_field', 'body');
      expectError(await put({ limits: [] }), 400, 'invalid_field', 'limits');
      expectError(
        await put({ limits: [{ name: 'Burst', requests: 1, windowSeconds: 1 }] }),
        400,
        'invalid_field',
        'limits.name',
      );
      expectError(
        await put({
          limits: [
            { name: 'a', requests: 1, windowSeconds: 1 },
            { name: 'a', requests: 2, windowSeconds: 2 },
          ],
        }),
        400,
        'invalid_field',
        'limits',
      );
      expectError(
        await put({ limits: [{ name: 'a', requests: 1, windowSeconds: 2_678_401 }] }),
        400,
        'invalid_field',
        'limits.windowSeconds',
      );
      expectError(await put({ rateLimit: null, extra: 1 }), 400, 'unknown_field', 'extra');
      expectError(
        await call('PUT', '/admin/apikeys/00000000000000000000/limits', {
          token: adminToken,
          body: { limits: null },
        }),
        404,
        'key_not_found',
      );
      const set = await put({ limits: [{ name: 'per-day', requests: 5000, windowSeconds: 86_400 }] });
      expect([set.status, set.body.limits]).toEqual([
        200,
        [{ name: 'per-day', requests: 5000, windowSeconds: 86_400 }],
      ]);
      // The owner sees it; the index entry the gateways read carries it.
      expect((await call('GET', `/apikeys/${id}`)).body.limits).toEqual([
        { name: 'per-day', requests: 5000, windowSeconds: 86_400 },
      ]);
      expect(await readSealed(client, redisKeys.apiKey(hashKey(made.body.key as string)))).toMatchObject({
        limits: [{ name: 'per-day', requests: 5000, windowSeconds: 86_400 }],
      });
      // Other fields stay immutable, for the CRD too.
      expect((await call('GET', `/apikeys/${id}`)).body).toMatchObject({
        roles: ['viewer'],
        state: 'active',
      });
    });

    it('lists and searches every user’s keys with their owner, and revokes any of them', async () => {
      const made = await create({ module: 'platform', roles: ['editor'], name: 'erin deploy' }, erinToken);
      const id = made.body.id as string;
      const all = await call('GET', '/admin/apikeys?limit=200', { token: adminToken });
      expect(all.status).toBe(200);
      const rows = all.body.items as Array<KeyJson & { owner: string; ownerName?: string }>;
      expect(rows.find((r) => r.id === id)).toMatchObject({
        owner: erin,
        ownerName: erin,
        name: 'erin deploy',
      });
      expect(new Set(rows.map((r) => r.owner))).toEqual(
        expect.objectContaining({ size: expect.any(Number) }),
      );
      expect(rows.map((r) => r.owner)).toEqual(expect.arrayContaining([alice, erin, dave]));
      expect(JSON.stringify(all.body)).not.toContain('hash');

      // Search matches the owner; `owner` narrows to one user.
      const byName = items(
        await call('GET', `/admin/apikeys?search=${encodeURIComponent(`erin-${suffix}`)}`, {
          token: adminToken,
        }),
      );
      expect(byName.length).toBeGreaterThanOrEqual(2);
      expect(byName.every((r) => (r as unknown as { owner: string }).owner === erin)).toBe(true);
      const onlyDave = items(
        await call('GET', `/admin/apikeys?owner=${encodeURIComponent(dave)}`, { token: adminToken }),
      );
      expect(onlyDave.map((r) => r.name)).toEqual(['dave’s']);
      expectError(
        await call('GET', '/admin/apikeys?owner=', { token: adminToken }),
        400,
        'invalid_field',
        'owner',
      );
      expectError(
        await call('GET', '/admin/apikeys?colour=red', { token: adminToken }),
        400,
        'unknown_field',
        'colour',
      );

      // Revoked by an administrator: gone from the owner's list and from the index at once.
      const revoke = await call('DELETE', `/admin/apikeys/${id}`, { token: adminToken });
      expect(revoke.status).toBe(204);
      expect(await indexed(made.body.key as string)).toBe(false);
      expectError(await call('GET', `/apikeys/${id}`, { token: erinToken }), 404, 'key_not_found');
      expectError(await call('DELETE', `/admin/apikeys/${id}`, { token: adminToken }), 404, 'key_not_found');
      expectError(
        await call('DELETE', '/admin/apikeys/not-an-id', { token: adminToken }),
        400,
        'invalid_field',
        'id',
      );
      expectError(
        await call('PUT', `/admin/apikeys/${id}`, { token: adminToken }),
        405,
        'method_not_allowed',
      );
    });

    it('paces each user: a loop of calls is refused past a burst, with when to retry; other users are not', async () => {
      const app = express();
      app.use('/api/v1', createManagementRouter({ ...deps, callsPerSecond: 5 }));
      const paced = app.listen(0, '127.0.0.1');
      await new Promise((r) => paced.once('listening', r));
      const url = `http://127.0.0.1:${(paced.address() as AddressInfo).port}/api/v1/me`;
      const me = async (token: string) => {
        const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
        return {
          status: res.status,
          headers: res.headers,
          body: (await res.json()) as Record<string, unknown>,
        };
      };
      try {
        const looper = await idp.issuer.mint(`looper-${suffix}@example.com`);
        const answers = await Promise.all(Array.from({ length: 70 }, () => me(looper)));
        const refused = answers.filter((a) => a.status === 429);
        // A burst of 50 (ten seconds' worth), and the few a second adds while they are answered.
        expect(refused.length).toBeGreaterThan(10);
        expect(answers.filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(50);
        expectError(refused[0]!, 429, 'rate_limited');
        expect(refused[0]!.body.error).toMatch(
          /more than a burst of 50 management calls, past 5 a second; wait \d+ s/,
        );
        expect(refused[0]!.headers.get('retry-after')).toMatch(/^\d+$/);
        expect((await me(aliceToken)).status).toBe(200);
        await new Promise((r) => setTimeout(r, 1_100));
        expect((await me(looper)).status).toBe(200);
      } finally {
        await new Promise((r) => paced.close(r));
      }
    });

    it('undoes a webhook made while its owner is offboarded: it never outlives the offboarding', async () => {
      const leaver = `late-${suffix}@example.com`;
      const leaverToken = await idp.issuer.mint(leaver);
      const webhooks = deps.webhooks.store;
      const create = webhooks.create.bind(webhooks);
      // The offboarding lands while the endpoint is written, after its owner's token was checked.
      webhooks.create = async (w) => {
        await deps.offboarded.mark(leaver);
        return create(w);
      };
      try {
        const made = await call('POST', '/webhooks', {
          token: leaverToken,
          body: { url: 'https://hooks.example.com/late', events: ['key.revoked'] },
        });
        expectError(made, 401, 'token_revoked');
      } finally {
        webhooks.create = create;
      }
      expect((await deps.webhooks.store.list()).map((w) => w.spec.url)).not.toContain(
        'https://hooks.example.com/late',
      );
    });

    it('offboards a user: every key of theirs revoked in one action, nobody else’s', async () => {
      const leaver = `leaver-${suffix}@example.com`;
      const leaverToken = await idp.issuer.mint(leaver);
      const keys: string[] = [];
      for (const roles of [['viewer'], ['editor'], ['datasets:viewer']]) {
        const a = await create({ module: 'platform', roles }, leaverToken);
        expect(a.status).toBe(201);
        keys.push(a.body.key as string);
      }
      // A key made outside this API (kubectl, a GitOps tool) carries no owner label: still theirs.
      const outside = await create({ module: 'platform', roles: ['viewer'], name: 'outside' }, leaverToken);
      keys.push(outside.body.key as string);
      const made = await store.find(outside.body.id as string);
      await store.update({ ...made!, metadata: { ...made!.metadata, labels: {} } });
      const stays = await create({ module: 'platform', roles: ['viewer'], name: 'stays' }, erinToken);
      // Their webhook endpoints go too; another user's stays.
      const hook = await call('POST', '/webhooks', {
        token: leaverToken,
        body: { url: 'https://hooks.example.com/leaver', events: ['key.revoked'] },
      });
      const erinsHook = await call('POST', '/webhooks', {
        token: erinToken,
        body: { url: 'https://hooks.example.com/erin', events: ['key.revoked'] },
      });

      const done = await call('POST', '/admin/offboard', { token: adminToken, body: { owner: leaver } });
      expect(done.status).toBe(200);
      expect(done.body.owner).toBe(leaver);
      expect((done.body.revoked as string[]).length).toBe(4);
      expect(done.body.webhooksRemoved).toEqual([hook.body.id]);
      const left = (await call('GET', '/webhooks', { token: adminToken })).body.items as Array<{
        id: string;
      }>;
      expect(left.map((w) => w.id)).toContain(erinsHook.body.id);
      expect(left.map((w) => w.id)).not.toContain(hook.body.id);
      for (const key of keys) expect(await indexed(key)).toBe(false);
      expect(await indexed(stays.body.key as string)).toBe(true);
      // A lockout, not only a revocation: the tokens the user still holds make, roll and list nothing.
      for (const attempt of [
        await call('GET', '/apikeys', { token: leaverToken }),
        await create({ module: 'platform', roles: ['viewer'] }, leaverToken),
      ]) {
        expectError(attempt, 401, 'token_revoked');
        expect(attempt.body.error).toMatch(/offboarded at .*sign in again/);
      }
      expect((await call('GET', '/me', { token: erinToken })).status).toBe(200);
      // Signed in again later (access restored): a new token passes, and nothing of before remains.
      await new Promise((r) => setTimeout(r, 1_100));
      const returning = await idp.issuer.mint(leaver);
      expect(items(await call('GET', '/apikeys', { token: returning }))).toEqual([]);

      // Again, or for a subject nobody has: nothing to revoke, said plainly.
      expect(
        (await call('POST', '/admin/offboard', { token: adminToken, body: { owner: leaver } })).body,
      ).toEqual({
        owner: leaver,
        revoked: [],
        webhooksRemoved: [],
      });
      expectError(
        await call('POST', '/admin/offboard', { token: adminToken, body: {} }),
        400,
        'invalid_field',
        'owner',
      );
      expectError(
        await call('POST', '/admin/offboard', { token: adminToken, body: { owner: '' } }),
        400,
        'invalid_field',
        'owner',
      );
      expectError(
        await call('POST', '/admin/offboard', { token: adminToken, body: { owner: leaver, all: true } }),
        400,
        'unknown_field',
        'all',
      );
      expectError(
        await call('POST', '/admin/offboard', {
          token: adminToken,
          raw: `owner=${leaver}`,
          contentType: 'text/plain',
        }),
        415,
        'unsupported_media_type',
      );
      expectError(
        await call('POST', '/admin/offboard', { token: adminToken, raw: '{"owner":' }),
        400,
        'invalid_json',
        'body',
      );
    });
  });
});

async function fetchWith(url: string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}
