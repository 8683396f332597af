import type { AddressInfo, Socket } from 'node:net';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { keyChangeTag, redisChannels, redisKeys } from '../../../common/redis/schema.js';
import type { OperatorManager } from '../../../operator/manager.js';
import { redis, restartRedis } from '../../harness/index.js';
import {
  apiKeyBody,
  cluster,
  type Cluster,
  countKeys,
  createModel,
  createWorkflow,
  deleteWorkflow,
  eventually,
  keyRef,
  listen,
  modelFolder,
  namespace,
  npSettings,
  removeModelFolders,
  setDeploymentReady,
  startOperator,
  uniqueWorkflow,
} from './support.js';
import { readSealed, openSealed, testSealer } from '../signing.js';
import { RouteWriter } from '../../../common/routes/workflow-routes.js';
import { KeyIndexWriter } from '../../../common/apikey/index-writer.js';

afterAll(removeModelFolders);

const TAG = 'operator-apikey';

describe('ApiKey index, workflow routes, restarts and Redis loss', () => {
  let c: Cluster;
  let ns: string;
  let redisUrl: string;
  let client: Redis;
  let operator: OperatorManager | undefined;
  const early = apiKeyBody('bda');

  beforeAll(async () => {
    c = await cluster();
    ns = await namespace(c, 'op-keys');
    redisUrl = (await redis(TAG)).url;
    client = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    // Created before the operator runs: picked up by the first list.
    await c.custom.createNamespacedCustomObject({ ...keyRef, namespace: ns, body: early.body });
    operator = startOperator(c, ns, redisUrl);
    await operator.start();
    await operator.synced();
  });
  afterAll(async () => {
    await operator?.stop();
    client?.disconnect();
    c?.kc.close();
  });

  const grantOf = async (hash: string) => {
    return (await readSealed(client, redisKeys.apiKey(hash))) as Record<string, unknown> | undefined;
  };
  const readKey = (name: string) =>
    c.custom.getNamespacedCustomObject({ ...keyRef, namespace: ns, name }).then(
      (k) => k as { metadata: { finalizers?: string[] } },
      () => undefined,
    );

  test('a key created before the operator started is indexed, and carries the finalizer', async () => {
    expect(await grantOf(early.hash)).toEqual({
      id: early.id,
      owner: 'alice',
      module: 'bda',
      roles: ['wf-1'],
    });
    expect((await readKey(`key-${early.id}`))?.metadata.finalizers).toEqual(['tollgate.dev/key-index']);
    expect(await client.get(redisKeys.indexMarker)).toMatch(/^\d{4}-/);
  });

  test('create → indexed and announced; delete → entry removed, announced, resource gone', async () => {
    const keys = await listen(redisUrl, redisChannels.keys);
    const k = apiKeyBody('platform', 'bob');
    k.body.spec.name = 'ci';
    k.body.spec.rateLimit = { requests: 5, windowSeconds: 60 };
    await c.custom.createNamespacedCustomObject({ ...keyRef, namespace: ns, body: k.body });
    const grant = await eventually(() => grantOf(k.hash), 'the index entry');
    expect(grant).toEqual({
      id: k.id,
      owner: 'bob',
      module: 'platform',
      roles: ['viewer'],
      name: 'ci',
      rateLimit: { requests: 5, windowSeconds: 60 },
    });
    await eventually(async () => keys.messages.includes(keyChangeTag(k.hash)), 'the keys announcement');
    expect(keys.messages).not.toContain(k.hash);

    keys.messages.length = 0;
    await c.custom.deleteNamespacedCustomObject({ ...keyRef, namespace: ns, name: `key-${k.id}` });
    await eventually(async () => (await readKey(`key-${k.id}`)) === undefined, 'the ApiKey gone');
    expect(await grantOf(k.hash)).toBeUndefined();
    expect(keys.messages).toContain(keyChangeTag(k.hash));
    keys.close();
  });

  test('a key of an Identity carries its limits; a change to the Identity rewrites the entry, its deletion refuses the key', async () => {
    const until = <T>(what: string, probe: () => Promise<T | undefined>) => eventually(probe, what);
    const identityRef = { group: 'tollgate.dev', version: 'v1alpha1', plural: 'identities', namespace: ns };
    const name = `team-${Math.random().toString(36).slice(2, 8)}`;
    const k = apiKeyBody('platform', 'carol');
    k.body.spec.identity = name;
    // The key first: its identity does not exist yet, and it must not be let off its limits.
    await c.custom.createNamespacedCustomObject({ ...keyRef, namespace: ns, body: k.body });
    expect(
      await until('the entry of a key whose identity is missing', async () => {
        const g = await grantOf(k.hash);
        return g?.['identity'] === undefined ? undefined : g['identity'];
      }),
    ).toEqual({ name, account: expect.stringMatching(/^@[0-9a-f]{24}$/), missing: true });
    await c.custom.createNamespacedCustomObject({
      ...identityRef,
      body: {
        apiVersion: 'tollgate.dev/v1alpha1',
        kind: 'Identity',
        metadata: { name },
        spec: { owner: 'carol', credits: { amount: 50 } },
      },
    });
    // The entry's identity but its account (the same throughout: a digest of the name).
    const identityIn = async (): Promise<string> => {
      const { account, ...rest } = ((await grantOf(k.hash))?.['identity'] ?? {}) as Record<string, unknown>;
      expect(account).toMatch(/^@[0-9a-f]{24}$/);
      return JSON.stringify(rest);
    };
    await until('the identity in its key entry', async () =>
      (await identityIn()) === JSON.stringify({ name, credits: { amount: 50 } }) ? true : undefined,
    );
    const keys = await listen(redisUrl, redisChannels.keys);
    const current = (await c.custom.getNamespacedCustomObject({ ...identityRef, name })) as {
      spec: Record<string, unknown>;
    };
    await c.custom.replaceNamespacedCustomObject({
      ...identityRef,
      name,
      body: {
        ...current,
        spec: { ...current.spec, limits: [{ name: 'burst', requests: 5, windowSeconds: 1 }] },
      },
    });
    await until('the changed limits in its key entry', async () =>
      (await identityIn()) ===
      JSON.stringify({
        name,
        limits: [{ name: 'burst', requests: 5, windowSeconds: 1 }],
        credits: { amount: 50 },
      })
        ? true
        : undefined,
    );
    // Announced, so no gateway replica keeps the old limits cached.
    expect(keys.messages).toContain(keyChangeTag(k.hash));
    keys.close();
    await c.custom.deleteNamespacedCustomObject({ ...identityRef, name });
    await until('the key refused once its identity is deleted', async () =>
      (await identityIn()) === JSON.stringify({ name, missing: true }) ? true : undefined,
    );
  });

  test('labelled workflow Services become bda routes, follow relabelling and go on delete', async () => {
    const [wfA, wfB] = [uniqueWorkflow('wf-a'), uniqueWorkflow('wf-b')];
    await createWorkflow(c, wfA, 'alice', [ns]);
    await createWorkflow(c, wfB, 'alice', [ns]);
    const body = (workflow: string) => ({
      metadata: {
        name: 'scorer',
        labels: { 'tollgate.dev/workflow': workflow, 'tollgate.dev/service': 'score' },
      },
      spec: {
        selector: { app: 'scorer' },
        ports: [
          { name: 'metrics', port: 9100 },
          { name: 'http', port: 8000 },
        ],
      },
    });
    await c.core.createNamespacedService({ namespace: ns, body: body(wfA) });
    const route = await eventually(
      () => client.get(redisKeys.bdaRoute(wfA, 'score')).then((v) => v ?? undefined),
      'the bda route',
    );
    const routed = await c.core.readNamespacedService({ namespace: ns, name: 'scorer' });
    const ip = routed.spec?.clusterIP;
    // Held: deleted, it keeps its cluster IP until the route is gone.
    expect(routed.metadata?.finalizers).toContain('tollgate.dev/route');
    expect(await openSealed(redisKeys.bdaRoute(wfA, 'score'), route)).toEqual({
      url: `http://${ip}:8000`,
      workflow: wfA,
      owner: 'alice',
      source: `service/${ns}/scorer`,
    });

    await c.core.patchNamespacedService({
      namespace: ns,
      name: 'scorer',
      body: [{ op: 'replace', path: '/metadata/labels/tollgate.dev~1workflow', value: wfB }],
    });
    await eventually(
      () => client.get(redisKeys.bdaRoute(wfB, 'score')).then((v) => v ?? undefined),
      'the moved route',
    );
    await eventually(
      async () => (await client.get(redisKeys.bdaRoute(wfA, 'score'))) === null,
      'the old route gone',
    );

    await c.core.deleteNamespacedService({ namespace: ns, name: 'scorer' });
    await eventually(
      async () => (await client.get(redisKeys.bdaRoute(wfB, 'score'))) === null,
      'the route gone',
    );
    // Then its finalizer, and the Service with it.
    await eventually(
      () =>
        c.core.readNamespacedService({ namespace: ns, name: 'scorer' }).then(
          () => undefined,
          () => true,
        ),
      'the Service gone',
    );
    await deleteWorkflow(c, wfA);
    await deleteWorkflow(c, wfB);
  });

  test('Redis flushed while running: the key index and the model routes come back', async () => {
    const name = 'model-flush';
    const dir = await modelFolder({ 'model-settings.json': npSettings(name), 'model.joblib': 'x' });
    await createModel(c, ns, name, { storageUri: `file://${dir}` });
    await eventually(() => c.apps.readNamespacedDeployment({ namespace: ns, name }), 'the Deployment');
    await setDeploymentReady(c, ns, name, 1);
    await eventually(() => client.get(redisKeys.modelRoute(name)).then((v) => v ?? undefined), 'the route');

    await client.flushall();
    await eventually(() => grantOf(early.hash), 'the index entry rebuilt', 10_000);
    await eventually(
      () => client.get(redisKeys.modelRoute(name)).then((v) => v ?? undefined),
      'the route rebuilt',
      10_000,
    );
    await eventually(
      () => client.get(redisKeys.indexMarker).then((v) => v ?? undefined),
      'the marker',
      10_000,
    );
  });

  test('Redis restarted empty: the same', async () => {
    await restartRedis(TAG);
    await eventually(() => grantOf(early.hash), 'the index entry rebuilt', 20_000);
    await eventually(
      () => client.get(redisKeys.modelRoute('model-flush')).then((v) => v ?? undefined),
      'the route rebuilt',
      20_000,
    );
  });

  test('operator restarted mid-way: changes made while it was down are applied, nothing duplicated or lost', async () => {
    await operator!.stop();
    operator = undefined;
    const added = apiKeyBody();
    await c.custom.createNamespacedCustomObject({ ...keyRef, namespace: ns, body: added.body });
    // Deleted while down: the finalizer holds the resource until the operator has removed the entry.
    await c.custom.deleteNamespacedCustomObject({ ...keyRef, namespace: ns, name: `key-${early.id}` });
    expect((await readKey(`key-${early.id}`))?.metadata.finalizers).toEqual(['tollgate.dev/key-index']);
    expect(await grantOf(early.hash)).toMatchObject({ id: early.id });
    // A route and a key entry the operator wrote, with no resource behind them any more (removed by
    // force while it was down).
    await new RouteWriter(client, await testSealer()).put(redisKeys.bdaRoute('ghost', 'svc'), {
      url: 'http://x',
      source: `service/${ns}/ghost`,
    });
    const ghost = apiKeyBody();
    await new KeyIndexWriter(client, await testSealer()).put(ghost.hash, {
      id: ghost.id,
      owner: 'x',
      module: 'platform',
      roles: ['viewer'],
    });
    // And one nobody sealed (written straight into Redis): swept too.
    const forged = apiKeyBody();
    await client.set(
      redisKeys.apiKey(forged.hash),
      JSON.stringify({ id: forged.id, owner: 'x', module: 'platform', roles: ['editor'] }),
    );

    operator = startOperator(c, ns, redisUrl);
    await operator.start();
    await operator.synced();
    expect(await grantOf(added.hash)).toMatchObject({ id: added.id });
    expect(await grantOf(early.hash)).toBeUndefined();
    expect(await grantOf(ghost.hash)).toBeUndefined();
    expect(await client.get(redisKeys.apiKey(forged.hash))).toBeNull();
    expect(await readKey(`key-${early.id}`)).toBeUndefined();
    expect(await client.get(redisKeys.bdaRoute('ghost', 'svc'))).toBeNull();
    const list = (await c.custom.listNamespacedCustomObject({ ...keyRef, namespace: ns })) as {
      items: unknown[];
    };
    expect(await countKeys(client, redisKeys.apiKey('*'))).toBe(list.items.length);
    expect(await client.get(redisKeys.modelRoute('model-flush'))).not.toBeNull();
    const deployments = await c.apps.listNamespacedDeployment({ namespace: ns });
    expect(deployments.items.map((d) => d.metadata?.name)).toEqual(['model-flush']);
  });

  test('a Model whose store never answers holds no one: the rebuild still ends, sweeps a dead route and marks the index', async () => {
    // A team's "object store": takes connections and requests, and never answers a byte.
    const held: Socket[] = [];
    const hostile = createServer((socket) => {
      held.push(socket);
      socket.on('error', () => undefined);
      socket.resume();
    });
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    try {
      await operator!.stop();
      operator = undefined;
      const port = (hostile.address() as AddressInfo).port;
      await c.core.createNamespacedSecret({
        namespace: ns,
        body: {
          metadata: { name: 'silent-s3' },
          stringData: {
            AWS_ACCESS_KEY_ID: 'team',
            AWS_SECRET_ACCESS_KEY: 'team-secret',
            AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
          },
        },
      });
      for (const name of ['model-silent-a', 'model-silent-b'])
        await createModel(c, ns, name, {
          storageUri: `s3://silent/${name}`,
          credentials: { secretName: 'silent-s3' },
        });
      // A Service routed before the operator stopped, deleted while it was down.
      await new RouteWriter(client, await testSealer()).put(redisKeys.bdaRoute('gone', 'svc'), {
        url: 'http://10.96.0.77:80',
        source: `service/${ns}/gone`,
      });
      await client.del(redisKeys.indexMarker);

      operator = startOperator(c, ns, redisUrl);
      await operator.start();
      // The stores never answer: the rebuild is done only because it stops waiting on them.
      await operator.synced();
      expect(held.length).toBeGreaterThan(0);
      expect(await client.get(redisKeys.bdaRoute('gone', 'svc'))).toBeNull();
      expect(await client.get(redisKeys.indexMarker)).toMatch(/^\d{4}-/);
      expect(await client.get(redisKeys.modelRoute('model-flush'))).not.toBeNull();
      // The check gives up on the silent store (its deadline), closing what it opened: a
      // stuck check would hold its connection, and a worker, for good.
      await eventually(
        async () => held.some((socket) => socket.destroyed || socket.readableEnded),
        'the operator giving up on the silent store',
        45_000,
      );
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => hostile.close(resolve));
    }
  }, 120_000);
});

describe('ApiKeys and Identities outside the release’s namespace', () => {
  test('mint nothing: a key written where teams work, with any roles, is never indexed; one in the release’s is', async () => {
    const c = await cluster();
    const team = await namespace(c, 'op-keys-team');
    const release = await namespace(c, 'op-keys-release');
    const url = (await redis(`${TAG}-scoped`)).url;
    const client = new Redis(url, { maxRetriesPerRequest: 1 });
    // The operator serves the team's Models; keys are believed only in the release's namespace.
    const operator = startOperator(c, team, url, {}, c.kc, release);
    try {
      await operator.start();
      await operator.synced();
      const forged = apiKeyBody('platform', 'mallory');
      forged.body.spec.roles = ['admin'];
      await c.custom.createNamespacedCustomObject({ ...keyRef, namespace: team, body: forged.body });
      const real = apiKeyBody('platform', 'alice');
      await c.custom.createNamespacedCustomObject({ ...keyRef, namespace: release, body: real.body });
      await eventually(
        async () => (await readSealed(client, redisKeys.apiKey(real.hash))) !== undefined,
        'the release’s key indexed',
      );
      // Written before the release's key, and a whole reconcile later still absent.
      expect(await client.exists(redisKeys.apiKey(forged.hash))).toBe(0);
    } finally {
      await operator.stop();
      client.disconnect();
      c.kc.close();
    }
  }, 60_000);
});
