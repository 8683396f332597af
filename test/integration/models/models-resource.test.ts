import { noModels } from '../../../gateway/v2/model-directory.js';
import { putWorkflowRoute } from '../workflow-route.js';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { generateKey, hashKey } from '../../../common/apikey/format.js';
import { KeyIndexWriter } from '../../../common/apikey/index-writer.js';
import { createLogger } from '../../../common/logger.js';
import type { Module } from '../../../common/resources/grant.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import { MODEL_PLURAL, modelSchema, type Model } from '../../../common/resources/model.js';
import { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { loadGatewayConfig } from '../../../gateway/config.js';
import { DirModelStore } from '../../../gateway/platform/models/dir-store.js';
import { createModelsResource } from '../../../gateway/platform/models/index.js';
import { KubeModelStore } from '../../../gateway/platform/models/kube-store.js';
import type { ModelStore } from '../../../gateway/platform/models/store.js';
import type { GatewayServer } from '../../../gateway/server.js';
import { kube, redis } from '../../harness/index.js';
import { repoRoot } from '../../harness/paths.js';
import { testSealer, testVerifier, TEST_SIGNING_KEY_FILE } from '../signing.js';
import { buildCentralGateway } from '../../../gateway/central-gateway.js';

/**
 * The built-in `models` platform resource through the real gateway (key check, role check, the
 * models handler), with platform keys in a real Redis index, against both stores: Model resources
 * on the real kube-apiserver (the CRD from crds/models.yaml), and the standalone manifest directory.
 * The same cases run against each.
 */
const run = promisify(execFile);
const log = createLogger('models-test', 'silent');
const PATH = '/events/platform/api/v1/models';

/** Plays the operator: writes a status the way each store's operator would. */
type StatusWriter = (name: string, status: Model['status']) => Promise<void>;

interface Backend {
  store: ModelStore;
  writeStatus: StatusWriter;
  close(): Promise<void>;
}

async function kubeBackend(): Promise<Backend> {
  const k = await kube();
  const kubectl = (...args: string[]) => run(k.kubectl, ['--kubeconfig', k.kubeconfig, ...args]);
  await kubectl('apply', '-f', join(repoRoot, 'crds', 'models.yaml'));
  await kubectl('wait', '--for=condition=Established', '--timeout=30s', 'crd/models.tollgate.dev');
  const namespace = `models-api-${randomBytes(3).toString('hex')}`;
  await kubectl('create', 'namespace', namespace);
  const kc = new KubeConfig();
  kc.loadFromFile(k.kubeconfig);
  const api = kc.makeApiClient(CustomObjectsApi);
  const gvr = { group: 'tollgate.dev', version: 'v1alpha1', namespace, plural: MODEL_PLURAL };
  return {
    store: new KubeModelStore(api, namespace),
    async writeStatus(name, status) {
      const current = await api.getNamespacedCustomObject({ ...gvr, name });
      await api.replaceNamespacedCustomObjectStatus({ ...gvr, name, body: { ...current, status } });
    },
    async close() {
      await kubectl('delete', 'namespace', namespace, '--wait=false');
    },
  };
}

async function dirBackend(): Promise<Backend> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-models-'));
  const manifests = new ManifestDir(dir, () => undefined);
  const collection = manifests.collection(MODEL_PLURAL, modelSchema);
  return {
    store: new DirModelStore(manifests),
    async writeStatus(name, status) {
      const current = await collection.get(name);
      if (current === undefined) throw new Error(`no manifest ${name}`);
      await collection.put({ ...current, status });
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

describe.each([
  ['Kubernetes API', kubeBackend],
  ['manifest directory', dirBackend],
])('models platform resource (%s)', (_label, makeBackend) => {
  let backend: Backend;
  let redisClient: Redis;
  let gateway: GatewayServer;
  let base: string;
  const keys: Record<string, string> = {};

  async function addKey(
    name: string,
    owner: string,
    module: Module,
    roles: string[],
    models?: string[],
  ): Promise<void> {
    const key = generateKey(module);
    await new KeyIndexWriter(redisClient, await testSealer()).put(hashKey(key), {
      id: randomBytes(10).toString('hex'),
      owner,
      module,
      roles,
      ...(models === undefined ? {} : { models }),
    });
    keys[name] = key;
  }

  const call = async (
    method: string,
    path: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; headers: Headers; json: Record<string, unknown> }> => {
    const init: RequestInit = { method, headers: { authorization: `Apikey ${key}`, ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${base}${path}`, init);
    return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    backend = await makeBackend();
    const r = await redis();
    redisClient = new Redis(r.url);
    const suffix = randomBytes(3).toString('hex');
    await putWorkflowRoute(redisClient, {
      workflow: `wf-alice-${suffix}`,
      service: 'api',
      url: 'http://127.0.0.1:9',
      owner: 'alice',
    });
    await putWorkflowRoute(redisClient, {
      workflow: `wf-bob-${suffix}`,
      service: 'api',
      url: 'http://127.0.0.1:9',
      owner: 'bob',
    });
    keys.aliceWorkflow = `wf-alice-${suffix}`;
    keys.bobWorkflow = `wf-bob-${suffix}`;
    await addKey('editor', 'alice', 'platform', ['editor']);
    await addKey('bobEditor', 'bob', 'platform', ['editor']);
    await addKey('modelsEditor', 'alice', 'platform', ['models:editor']);
    await addKey('viewer', 'carol', 'platform', ['models:viewer']);
    await addKey('inference', 'carol', 'platform', ['models:inference']);
    await addKey('bda', 'alice', 'bda', [`wf-alice-${suffix}`]);
    await addKey('scopedEditor', 'alice', 'platform', ['editor'], ['model-scoped-*']);

    const config = loadGatewayConfig({
      env: {},
      overrides: { grantSigningKeyFile: TEST_SIGNING_KEY_FILE, redisUrl: r.url, port: 0, host: '127.0.0.1' },
    });
    const handler = createModelsResource({
      store: backend.store,
      workflows: new WorkflowRoutes(redisClient, await testVerifier()),
      log,
    });
    gateway = await buildCentralGateway(config, log, {
      models: noModels,
      platformResources: () => new Map([['models', handler]]),
    });
    const address = await gateway.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await gateway?.shutdown();
    redisClient?.disconnect();
    await backend?.close();
  });

  const iris = {
    metadata: { name: 'model-iris', labels: { team: 'risk' } },
    spec: { storageUri: 's3://models/iris' },
  };

  it('lists no models at first', async () => {
    const res = await call('GET', PATH, keys.viewer as string);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ items: [] });
  });

  it('creates a model (201, Location) recording who created it', async () => {
    const res = await call('POST', PATH, keys.editor as string, iris);
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`${PATH}/model-iris`);
    expect(res.json).toMatchObject({
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'Model',
      metadata: {
        name: 'model-iris',
        generation: 1,
        labels: { team: 'risk' },
        annotations: { 'tollgate.dev/owner': 'alice' },
      },
      // Written out: the chart's default (models.gateway) may be sidecar, which this namespace never gets.
      spec: { storageUri: 's3://models/iris', gateway: 'central' },
    });
    const metadata = res.json.metadata as Record<string, unknown>;
    expect(metadata.resourceVersion).toEqual(expect.any(String));
    expect(metadata.creationTimestamp).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/));
    expect(metadata).not.toHaveProperty('managedFields');
  });

  it('refuses a second model of the same name (409) and leaves the first untouched', async () => {
    const res = await call('POST', PATH, keys.editor as string, {
      metadata: { name: 'model-iris' },
      spec: { storageUri: 's3://other/place' },
    });
    expect(res.status).toBe(409);
    expect(res.json).toMatchObject({ code: 'model_exists', field: 'metadata.name' });
    const got = await call('GET', `${PATH}/model-iris`, keys.viewer as string);
    expect((got.json.spec as { storageUri: string }).storageUri).toBe('s3://models/iris');
  });

  it('reads one model and lists them, to a viewer key', async () => {
    const one = await call('GET', `${PATH}/model-iris`, keys.viewer as string);
    expect(one.status).toBe(200);
    expect(one.json).toMatchObject({
      metadata: { name: 'model-iris' },
      spec: { storageUri: 's3://models/iris' },
    });
    const all = await call('GET', PATH, keys.viewer as string);
    expect((all.json.items as Model[]).map((m) => m.metadata.name)).toEqual(['model-iris']);
  });

  it('updates the spec with PUT, moving the generation and keeping the status the operator wrote', async () => {
    await backend.writeStatus('model-iris', {
      phase: 'Ready',
      readyReplicas: 1,
      url: 'http://model-iris:8080',
    });
    const before = await call('GET', `${PATH}/model-iris`, keys.viewer as string);
    const res = await call('PUT', `${PATH}/model-iris`, keys.modelsEditor as string, {
      spec: { storageUri: 's3://models/iris-v2', replicas: 2 },
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      metadata: {
        name: 'model-iris',
        generation: 2,
        labels: { team: 'risk' },
        annotations: { 'tollgate.dev/owner': 'alice' },
      },
      spec: { storageUri: 's3://models/iris-v2', replicas: 2 },
      status: { phase: 'Ready', readyReplicas: 1, url: 'http://model-iris:8080' },
    });
    expect((res.json.metadata as { resourceVersion: string }).resourceVersion).not.toBe(
      (before.json.metadata as { resourceVersion: string }).resourceVersion,
    );
  });

  it('applies optimistic concurrency when the caller sends metadata.resourceVersion', async () => {
    const current = await call('GET', `${PATH}/model-iris`, keys.viewer as string);
    const version = (current.json.metadata as { resourceVersion: string }).resourceVersion;
    const ok = await call('PUT', `${PATH}/model-iris`, keys.editor as string, {
      metadata: { name: 'model-iris', resourceVersion: version, labels: { team: 'fraud' } },
      spec: { storageUri: 's3://models/iris-v2', replicas: 2 },
    });
    expect(ok.status).toBe(200);
    // Same spec: the generation stays; labels given replace the user's, Tollgate's are kept.
    expect(ok.json).toMatchObject({
      metadata: { generation: 2, labels: { team: 'fraud' }, annotations: { 'tollgate.dev/owner': 'alice' } },
    });
    const stale = await call('PUT', `${PATH}/model-iris`, keys.editor as string, {
      metadata: { resourceVersion: version },
      spec: { storageUri: 's3://models/iris-v3' },
    });
    expect(stale.status).toBe(409);
    expect(stale.json).toMatchObject({ code: 'model_conflict', field: 'metadata.resourceVersion' });
    const after = await call('GET', `${PATH}/model-iris`, keys.viewer as string);
    expect((after.json.spec as { storageUri: string }).storageUri).toBe('s3://models/iris-v2');
  });

  it('answers 404 for a model that does not exist, on GET and PUT', async () => {
    for (const name of ['model-nope', 'not-a-model-name']) {
      const get = await call('GET', `${PATH}/${name}`, keys.viewer as string);
      expect([get.status, get.json.code]).toEqual([404, 'unknown_model']);
      const put = await call('PUT', `${PATH}/${name}`, keys.editor as string, {
        spec: { storageUri: 's3://a/b' },
      });
      expect([put.status, put.json.code]).toEqual([404, 'unknown_model']);
    }
    const deeper = await call('GET', `${PATH}/model-iris/extra`, keys.viewer as string);
    expect([deeper.status, deeper.json.code]).toEqual([404, 'unknown_endpoint']);
  });

  it('lets only keys whose roles allow it write, and only platform keys in', async () => {
    const viewerPost = await call('POST', PATH, keys.viewer as string, {
      metadata: { name: 'model-x' },
      spec: { storageUri: 's3://a/b' },
    });
    expect([viewerPost.status, viewerPost.json.code]).toEqual([403, 'role_not_allowed']);
    const inferenceGet = await call('GET', PATH, keys.inference as string);
    expect([inferenceGet.status, inferenceGet.json.code]).toEqual([403, 'role_not_allowed']);
    const bdaGet = await call('GET', PATH, keys.bda as string);
    expect([bdaGet.status, bdaGet.json.code]).toEqual([403, 'module_mismatch']);
    const del = await call('DELETE', `${PATH}/model-iris`, keys.editor as string);
    expect(del.status).toBe(405);
    const postItem = await call('POST', `${PATH}/model-iris`, keys.editor as string, iris);
    expect([postItem.status, postItem.json.code, postItem.headers.get('allow')]).toEqual([
      405,
      'method_not_allowed',
      'GET, PUT',
    ]);
    const putCollection = await call('PUT', PATH, keys.editor as string, iris);
    expect([putCollection.status, putCollection.headers.get('allow')]).toEqual([405, 'GET, POST']);
    expect((await call('GET', `${PATH}/model-x`, keys.viewer as string)).status).toBe(404);
  });

  it.each([
    ['no name', { metadata: {}, spec: { storageUri: 's3://a/b' } }, 'invalid_field', 'metadata.name'],
    [
      'a name not model-<id>',
      { metadata: { name: 'Iris' }, spec: { storageUri: 's3://a/b' } },
      'invalid_field',
      'metadata.name',
    ],
    ['no spec', { metadata: { name: 'model-a' } }, 'invalid_field', 'spec'],
    [
      'an http storage URI',
      { metadata: { name: 'model-a' }, spec: { storageUri: 'http://a/b' } },
      'invalid_field',
      'spec.storageUri',
    ],
    [
      'too many replicas',
      { metadata: { name: 'model-a' }, spec: { storageUri: 's3://a/b', replicas: 51 } },
      'invalid_field',
      'spec.replicas',
    ],
    [
      'a sidecar, which no model of Tollgate’s own namespace gets',
      { metadata: { name: 'model-a' }, spec: { storageUri: 's3://a/b', gateway: 'sidecar' } },
      'invalid_field',
      'spec.gateway',
    ],
    [
      'a resource quantity that is not one',
      {
        metadata: { name: 'model-a' },
        spec: { storageUri: 's3://a/b', resources: { requests: { cpu: 'lots' } } },
      },
      'invalid_field',
      'spec.resources.requests.cpu',
    ],
    [
      'a misspelt spec field',
      { metadata: { name: 'model-a' }, spec: { storageUri: 's3://a/b', replica: 2 } },
      'unknown_field',
      'spec.replica',
    ],
    [
      'a status',
      { metadata: { name: 'model-a' }, spec: { storageUri: 's3://a/b' }, status: { phase: 'Ready' } },
      'read_only_field',
      'status',
    ],
    [
      'a namespace',
      { metadata: { name: 'model-a', namespace: 'kube-system' }, spec: { storageUri: 's3://a/b' } },
      'unknown_field',
      'metadata.namespace',
    ],
    [
      'a reserved label',
      {
        metadata: { name: 'model-a', labels: { 'tollgate.dev/owner': 'bob' } },
        spec: { storageUri: 's3://a/b' },
      },
      'invalid_field',
      'metadata.labels',
    ],
    [
      'a reserved annotation',
      {
        metadata: { name: 'model-a', annotations: { 'tollgate.dev/owner': 'bob' } },
        spec: { storageUri: 's3://a/b' },
      },
      'invalid_field',
      'metadata.annotations',
    ],
    [
      'a resourceVersion on create',
      { metadata: { name: 'model-a', resourceVersion: '7' }, spec: { storageUri: 's3://a/b' } },
      'invalid_field',
      'metadata.resourceVersion',
    ],
    [
      'another kind',
      { kind: 'Deployment', metadata: { name: 'model-a' }, spec: { storageUri: 's3://a/b' } },
      'invalid_field',
      'kind',
    ],
  ])(
    'refuses a body with %s (400 naming the field) and creates nothing',
    async (_what, body, code, field) => {
      const res = await call('POST', PATH, keys.editor as string, body);
      expect(res.status).toBe(400);
      expect(res.json).toMatchObject({ code, field });
      expect(typeof res.json.error).toBe('string');
      expect((await call('GET', `${PATH}/model-a`, keys.viewer as string)).status).toBe(404);
    },
  );

  it('refuses bodies that are not JSON, not declared JSON, or too large', async () => {
    const notJson = await call('POST', PATH, keys.editor as string, '{"metadata":');
    expect([notJson.status, notJson.json.code]).toEqual([400, 'invalid_json']);
    const wrongType = await call('POST', PATH, keys.editor as string, JSON.stringify(iris), {
      'content-type': 'text/plain',
    });
    expect([wrongType.status, wrongType.json.code]).toEqual([415, 'unsupported_media_type']);
    const huge = {
      metadata: { name: 'model-big', annotations: { note: 'x'.repeat(70_000) } },
      spec: { storageUri: 's3://a/b' },
    };
    const tooLarge = await call('POST', PATH, keys.editor as string, huge);
    expect([tooLarge.status, tooLarge.json.code]).toEqual([413, 'body_too_large']);
    expect((await call('GET', `${PATH}/model-big`, keys.viewer as string)).status).toBe(404);
  });

  it('lets only the user who made a model change it: another editor cannot re-point its name', async () => {
    // model-iris serves no workflow: no workflow owner to ask, but it is still alice's.
    for (const spec of [
      { storageUri: 's3://models/evil' },
      { storageUri: 's3://models/evil', replicas: 0 },
    ]) {
      const hijack = await call('PUT', `${PATH}/model-iris`, keys.bobEditor as string, { spec });
      expect([hijack.status, hijack.json.code]).toEqual([403, 'model_not_owned']);
      expect(hijack.json.error).toBe(
        'model "model-iris" was made by another user; only the user who made it changes it',
      );
    }
    const kept = await call('GET', `${PATH}/model-iris`, keys.viewer as string);
    expect((kept.json.spec as Model['spec']).storageUri).not.toBe('s3://models/evil');
  });

  it("attaches a model only to a workflow of the key's owner", async () => {
    const mine = await call('POST', PATH, keys.editor as string, {
      metadata: { name: 'model-scorer' },
      spec: { storageUri: 's3://models/scorer', workflow: keys.aliceWorkflow },
    });
    expect(mine.status).toBe(201);
    const theirs = await call('POST', PATH, keys.editor as string, {
      metadata: { name: 'model-intruder' },
      spec: { storageUri: 's3://models/x', workflow: keys.bobWorkflow },
    });
    expect([theirs.status, theirs.json.code]).toEqual([403, 'workflow_not_owned']);
    expect((await call('GET', `${PATH}/model-intruder`, keys.viewer as string)).status).toBe(404);
    const move = await call('PUT', `${PATH}/model-iris`, keys.editor as string, {
      spec: { storageUri: 's3://models/iris-v2', workflow: keys.bobWorkflow },
    });
    expect([move.status, move.json.code]).toEqual([403, 'workflow_not_owned']);
    // Another user's editor key can neither change nor detach a model serving alice's workflow.
    for (const spec of [
      { storageUri: 's3://models/evil', workflow: keys.aliceWorkflow },
      { storageUri: 's3://models/evil' },
    ]) {
      const hijack = await call('PUT', `${PATH}/model-scorer`, keys.bobEditor as string, { spec });
      expect([hijack.status, hijack.json.code]).toEqual([403, 'workflow_not_owned']);
    }
    const kept = await call('GET', `${PATH}/model-scorer`, keys.viewer as string);
    expect((kept.json.spec as Model['spec']).storageUri).toBe('s3://models/scorer');
    const ownerUpdate = await call('PUT', `${PATH}/model-scorer`, keys.editor as string, {
      spec: { storageUri: 's3://models/scorer-v2', workflow: keys.aliceWorkflow },
    });
    expect(ownerUpdate.status).toBe(200);

    const filtered = await call('GET', `${PATH}?workflow=${keys.aliceWorkflow}`, keys.viewer as string);
    expect((filtered.json.items as Model[]).map((m) => m.metadata.name)).toEqual(['model-scorer']);
    const all = await call('GET', PATH, keys.viewer as string);
    expect((all.json.items as Model[]).map((m) => m.metadata.name)).toEqual(['model-iris', 'model-scorer']);
    const badQuery = await call('GET', `${PATH}?sort=name`, keys.viewer as string);
    expect([badQuery.status, badQuery.json.code]).toEqual([400, 'unknown_field']);
  });

  // Last: it adds a model the listings above do not expect.
  it('shows, reads and writes to a key limited to models only those models', async () => {
    const scoped = keys.scopedEditor as string;
    const made = await call('POST', PATH, scoped, {
      metadata: { name: 'model-scoped-a' },
      spec: { storageUri: 's3://models/scoped-a' },
    });
    expect(made.status).toBe(201);
    const irisUri = async () =>
      ((await call('GET', `${PATH}/model-iris`, keys.viewer as string)).json.spec as { storageUri: string })
        .storageUri;
    const before = await irisUri();
    const listed = await call('GET', PATH, scoped);
    expect((listed.json.items as Model[]).map((m) => m.metadata.name)).toEqual(['model-scoped-a']);
    for (const [method, body] of [
      ['GET', undefined],
      ['PUT', { spec: { storageUri: 's3://models/taken' } }],
    ] as const) {
      const refused = await call(method, `${PATH}/model-iris`, scoped, body);
      expect([method, refused.status, refused.json.code]).toEqual([method, 403, 'model_not_in_key_scope']);
    }
    const outside = await call('POST', PATH, scoped, {
      metadata: { name: 'model-other' },
      spec: { storageUri: 's3://models/other' },
    });
    expect([outside.status, outside.json.code]).toEqual([403, 'model_not_in_key_scope']);
    // Untouched by the refused PUT, and the refused POST made nothing.
    expect(await irisUri()).toBe(before);
    expect((await call('GET', `${PATH}/model-other`, keys.viewer as string)).status).toBe(404);
  });
});

describe("the Model CRD's cohort rules, on the real kube-apiserver", () => {
  let kubectl: (...args: string[]) => Promise<{ stdout: string; stderr: string }>;
  let namespace: string;

  beforeAll(async () => {
    const k = await kube();
    kubectl = (...args) => run(k.kubectl, ['--kubeconfig', k.kubeconfig, ...args]);
    await kubectl('apply', '-f', join(repoRoot, 'crds', 'models.yaml'));
    await kubectl('wait', '--for=condition=Established', '--timeout=30s', 'crd/models.tollgate.dev');
    namespace = `cohorts-${randomBytes(3).toString('hex')}`;
    await kubectl('create', 'namespace', namespace);
  }, 120_000);
  afterAll(async () => {
    if (namespace !== undefined) await kubectl('delete', 'namespace', namespace, '--wait=false');
  });

  /** Creates a Model with these spec fields: '' when the API server takes it, else its refusal. */
  const applied = async (name: string, extra: Record<string, unknown>): Promise<string> => {
    const manifest = {
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'Model',
      metadata: { name, namespace },
      spec: {
        versions: [
          { name: '1', storageUri: 's3://m/1' },
          { name: '2', storageUri: 's3://m/2' },
          { name: '3', storageUri: 's3://m/3' },
        ],
        ...extra,
      },
    };
    const file = join(tmpdir(), `${name}-${randomBytes(3).toString('hex')}.json`);
    await writeFile(file, JSON.stringify(manifest));
    try {
      await kubectl('create', '-f', file);
      return '';
    } catch (err) {
      return (err as { stderr?: string }).stderr ?? String(err);
    } finally {
      await rm(file, { force: true });
    }
  };

  it('takes a cohort instead of a percent, beside percents that add up to 100', async () => {
    expect(
      await applied('model-c1', {
        traffic: [
          { version: '2', cohort: { identities: ['acme'], keys: ['k1'], percent: 10 } },
          { version: '3', percent: 100 },
        ],
      }),
    ).toBe('');
    expect(
      await applied('model-c2', {
        rollout: { version: '2', cohort: { identities: ['acme'] }, maxLatencyOverDefaultMs: 20 },
        shadow: { version: '3', cohort: { keys: ['k1'] } },
      }),
    ).toBe('');
  });

  it('refuses an entry with both or neither, an empty cohort and a name no identity can have', async () => {
    const both = await applied('model-c3', {
      traffic: [{ version: '2', percent: 5, cohort: { identities: ['acme'] } }],
    });
    expect(both).toContain(
      'each spec.traffic entry takes either a percent of the calls or a cohort of callers',
    );
    const neither = await applied('model-c4', { traffic: [{ version: '2' }] });
    expect(neither).toContain(
      'each spec.traffic entry takes either a percent of the calls or a cohort of callers',
    );
    expect(await applied('model-c5', { traffic: [{ version: '2', cohort: {} }] })).toContain(
      'spec.traffic[0].cohort',
    );
    expect(
      await applied('model-c6', { traffic: [{ version: '2', cohort: { identities: ['Not An Identity'] } }] }),
    ).toContain('spec.traffic[0].cohort.identities[0]');
  });
});
