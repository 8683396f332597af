import { unusedAudit } from '../../harness/audit.js';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OffboardedUsers } from '../../../gateway/auth/offboarded-users.js';
import { webhookDeps } from './webhook-deps.js';
import { dirWebhookStore } from '../../../gateway/webhooks/store.js';
import { dirIdentityStore } from '../../../common/identity/store.js';
import express from 'express';
import { Redis } from 'ioredis';
import { DirApiKeyStore } from '../../../common/apikey/dir-store.js';
import { readKeyGrant } from '../../../common/apikey/index-reader.js';
import { KeyIndexWriter } from '../../../common/apikey/index-writer.js';
import { RoleCatalogue } from '../../../common/apikey/roles.js';
import { createLogger } from '../../../common/logger.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { createManagementRouter } from '../../../gateway/api/router.js';
import { DirModelStore } from '../../../gateway/platform/models/dir-store.js';
import { createTokenVerifier } from '../../../gateway/auth/oidc.js';
import { redis, restartRedis, stopRedis } from '../../harness/index.js';
import { loopbackIdentityProvider, NO_ADMINS, removeTempDirs, tempDir } from './fixtures.js';
import { testSealer, testVerifier } from '../signing.js';

afterAll(removeTempDirs);

const TAG = 'keys-management-down';

/** With Redis down, the management API refuses with 503 and leaves no half-made key behind. */
describe('management API with Redis down', () => {
  let idp: Awaited<ReturnType<typeof loopbackIdentityProvider>>;
  let server: Server;
  let base: string;
  let client: Redis;
  let store: DirApiKeyStore;
  let token: string;

  beforeAll(async () => {
    idp = await loopbackIdentityProvider();
    const { url } = await redis(TAG);
    client = new Redis(url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 50 });
    client.on('error', () => undefined);
    await new Promise((r) => client.once('ready', r));
    store = new DirApiKeyStore(new ManifestDir(await tempDir('tollgate-down-'), () => undefined));
    const app = express();
    app.use(
      '/api/v1',
      createManagementRouter({
        store,
        webhooks: await webhookDeps(
          client,
          dirWebhookStore(new ManifestDir(await tempDir('tollgate-down-wh-'), () => undefined)),
          store,
        ),
        identities: dirIdentityStore(new ManifestDir(await tempDir('tollgate-down-ids-'), () => undefined)),
        index: new KeyIndexWriter(client, await testSealer()),
        sealer: await testSealer(),
        redis: client,
        audit: unusedAudit(),
        maxRollGraceSeconds: 3_600,
        workflows: new WorkflowRoutes(client, await testVerifier()),
        roles: new RoleCatalogue(),
        verifyToken: new OffboardedUsers(client, 0).guard(
          createTokenVerifier(
            { issuer: 'urn:tollgate:standalone', audience: 'tollgate', jwksUrl: idp.jwksUrl },
            NO_ADMINS,
          ),
        ),
        offboarded: new OffboardedUsers(client, 0),
        admin: NO_ADMINS,
        models: new DirModelStore(new ManifestDir(await tempDir('tollgate-down-models-'), () => undefined)),
        leakReports: { keys: undefined, action: 'revoke' },
        findGrant: async (hash) => readKeyGrant(client, await testVerifier(), hash),
        log: createLogger('redis-down-test', 'silent'),
      }),
    );
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
    token = await idp.issuer.mint('alice');
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await idp.close();
    client.disconnect();
  });

  const json = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown> };
  };
  it('refuses to create, list or delete with 503 redis_unavailable, and keeps the store consistent', async () => {
    const created = await json('POST', '/apikeys', { module: 'platform', roles: ['viewer'] });
    expect(created.status).toBe(201);
    const id = created.body.id as string;

    await stopRedis(TAG);
    const refusedCreate = await json('POST', '/apikeys', { module: 'platform', roles: ['editor'] });
    expect(refusedCreate).toMatchObject({ status: 503, body: { code: 'redis_unavailable' } });
    expect(refusedCreate.body).not.toHaveProperty('key');
    // The resource written before the index failed was undone: the key nobody received is gone.
    expect((await store.list('alice')).items.map((k) => k.metadata.name)).toEqual([`key-${id}`]);

    expect(await json('POST', '/apikeys', { module: 'bda', roles: ['wf'] })).toMatchObject({
      status: 503,
      body: { code: 'redis_unavailable' },
    });
    expect(await json('GET', '/apikeys')).toMatchObject({ status: 503, body: { code: 'redis_unavailable' } });
    expect(await json('GET', '/modules')).toMatchObject({ status: 503, body: { code: 'redis_unavailable' } });

    // A delete that cannot reach the index keeps the resource, so a retry can finish it.
    expect(await json('DELETE', `/apikeys/${id}`)).toMatchObject({
      status: 503,
      body: { code: 'redis_unavailable' },
    });
    expect(await store.get('alice', id)).toMatchObject({ metadata: { name: `key-${id}` } });

    await restartRedis(TAG);
    const deadline = Date.now() + 5_000;
    while (client.status !== 'ready' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect((await json('DELETE', `/apikeys/${id}`)).status).toBe(204);
    expect(await store.get('alice', id)).toBeUndefined();
  });
});
