import { KubeConfig } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { redisChannels, redisKeys, routeChangeTag } from '../../../common/redis/schema.js';
import type { Model } from '../../../common/resources/model.js';
import { createLogger } from '../../../common/logger.js';
import type { OperatorManager } from '../../../operator/manager.js';
import { noRouteHold } from '../../../operator/route-hold.js';
import { KubeRuntimeDriver } from '../../../operator/serving/kube-runtime.js';
import type { RuntimePlan } from '../../../operator/serving/runtime-driver.js';
import { KubeSecretCredentials } from '../../../operator/storage/credentials.js';
import { PULL_THEN_IDLE, PULLED_MARKER, WAIT_THEN_SERVE } from '../../../operator/serving/model-workload.js';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { s3ClientFromEnv } from '../../../common/storage/s3-client.js';
import { minio, redis } from '../../harness/index.js';
import {
  apiKeyBody,
  cluster,
  type Cluster,
  createModel,
  eventsFor,
  eventually,
  getModel,
  keyRef,
  listen,
  modelFolder,
  modelRef,
  namespace,
  npSettings,
  PULLER_IMAGE,
  removeModelFolders,
  setDeploymentReady,
  startOperator,
  createWorkflow,
  deleteWorkflow,
  uniqueWorkflow,
} from './support.js';
import { openSealed, readSealed } from '../signing.js';

afterAll(removeModelFolders);

const cond = (m: Model | undefined, type: string) => m?.status?.conditions?.find((c) => c.type === type);

describe('Model reconciler on a real API server', () => {
  let c: Cluster;
  let ns: string;
  let redisUrl: string;
  let client: Redis;
  let operator: OperatorManager;

  beforeAll(async () => {
    c = await cluster();
    ns = await namespace(c, 'op-model');
    redisUrl = (await redis('operator-model')).url;
    client = new Redis(redisUrl);
    operator = startOperator(c, ns, redisUrl);
    await operator.start();
    await operator.synced();
  });
  afterAll(async () => {
    await operator?.stop();
    client?.disconnect();
    c?.kc.close();
  });

  test('the CRD rejects a bad name, storage URI scheme or replica count at apply time', async () => {
    const attempt = (name: string, spec: Record<string, unknown>) =>
      c.custom
        .createNamespacedCustomObject({
          ...modelRef,
          namespace: ns,
          body: { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Model', metadata: { name }, spec },
        })
        .then(
          () => 'created',
          (e: { code?: number; body?: string }) => `${e.code}: ${String(e.body)}`,
        );
    expect(await attempt('iris', { storageUri: 's3://b/m' })).toMatch(/^422: .*metadata.name must be model-/);
    expect(await attempt('model-Iris', { storageUri: 's3://b/m' })).toMatch(
      /^422: .*metadata.name must be model-/,
    );
    expect(await attempt('model-a', { storageUri: 'http://b/m' })).toMatch(/^422: .*spec.storageUri/);
    expect(await attempt('model-a', { storageUri: 's3://b/\rm' })).toMatch(/^422: .*spec.storageUri/);
    expect(await attempt('model-a', { storageUri: 's3://b/m', replicas: 51 })).toMatch(
      /^422: .*spec.replicas/,
    );
    expect(await attempt('model-a', { storageUri: 's3://b/m', replicas: -1 })).toMatch(
      /^422: .*spec.replicas/,
    );
    // Where MLServer listens is Tollgate's (behind a sidecar, the pod's loopback only).
    for (const name of ['MLSERVER_HOST', 'MLSERVER_HTTP_PORT', 'TOLLGATE_PULLED'])
      expect(await attempt('model-a', { storageUri: 's3://b/m', env: [{ name, value: 'x' }] })).toMatch(
        /^422: .*spec.env may not set MLSERVER_HOST, .* Tollgate sets them itself/,
      );
    expect(
      await attempt('model-env', {
        storageUri: 's3://b/m',
        env: [{ name: 'MLSERVER_PARALLEL_WORKERS', value: '2' }],
      }),
    ).toBe('created');
    await c.custom.deleteNamespacedCustomObject({ ...modelRef, namespace: ns, name: 'model-env' });
    const badKey = apiKeyBody();
    badKey.body.metadata.name = 'key-NOTHEX';
    await expect(
      c.custom.createNamespacedCustomObject({ ...keyRef, namespace: ns, body: badKey.body }),
    ).rejects.toMatchObject({
      code: 422,
      body: expect.stringContaining('metadata.name must be key-'),
    });
    const out = await c.kubectl(
      'get',
      'crd',
      'models.tollgate.dev',
      '-o',
      'jsonpath={.spec.versions[0].additionalPrinterColumns[*].name}',
    );
    expect(out.stdout).toBe('Phase Ready Version URL Age');
  });

  test('a valid folder gets a Deployment and Service, field by field; readiness drives status, events and the route', async () => {
    const name = 'model-iris';
    const dir = await modelFolder({ 'model-settings.json': npSettings(name), 'model.joblib': 'bytes' });
    const routes = await listen(redisUrl, redisChannels.routes);
    const created = await createModel(c, ns, name, {
      storageUri: `file://${dir}`,
      replicas: 2,
      resources: { limits: { cpu: 1, memory: '1Gi' } },
    });

    const d = await eventually(
      () => c.apps.readNamespacedDeployment({ namespace: ns, name }),
      'the Deployment',
    );
    expect(d.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'tollgate.dev/v1alpha1',
        kind: 'Model',
        name,
        uid: created.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(d.spec?.replicas).toBe(2);
    expect(d.spec?.selector.matchLabels).toEqual({ 'tollgate.dev/model': name });
    const pod = d.spec!.template.spec!;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    expect(pod.volumes).toContainEqual({ name: 'models', emptyDir: {} });
    // The runtime and the puller start together; the runtime waits for the folder to be whole.
    expect(pod.initContainers).toBeUndefined();
    const [main, puller] = pod.containers;
    expect(puller).toMatchObject({
      name: 'pull',
      image: PULLER_IMAGE,
      command: ['sh', '-c', PULL_THEN_IDLE, 'pull'],
      args: ['pull', `file://${dir}`, `/mnt/models/${name}`],
      env: [{ name: 'TOLLGATE_PULLED', value: PULLED_MARKER }],
    });
    expect(puller!.volumeMounts).toEqual([{ name: 'models', mountPath: '/mnt/models' }]);
    expect(puller!.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
    });
    expect(main!.image).toBe('seldonio/mlserver:1.7.1-sklearn');
    expect(main!.command).toEqual(['sh', '-c', WAIT_THEN_SERVE]);
    expect(main!.env).toContainEqual({ name: 'TOLLGATE_PULLED', value: PULLED_MARKER });
    expect(main!.readinessProbe?.httpGet).toMatchObject({ path: `/v2/models/${name}/ready`, port: 'http' });
    expect(main!.livenessProbe?.httpGet).toMatchObject({ path: '/v2/health/live', port: 'http' });
    expect(main!.resources).toEqual({ limits: { cpu: '1', memory: '1Gi' } });
    expect(main!.volumeMounts).toContainEqual({ name: 'models', mountPath: '/mnt/models', readOnly: true });
    expect(main!.securityContext).toMatchObject({ runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
    expect(d.spec!.template.metadata?.annotations?.['tollgate.dev/template-hash']).toMatch(/^[0-9a-f]{16}$/);
    // Prometheus finds MLServer's own metrics from the pod's annotations.
    expect(d.spec!.template.metadata?.annotations).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '8082',
      'prometheus.io/path': '/metrics',
    });
    expect(main!.ports).toContainEqual({ name: 'metrics', containerPort: 8082, protocol: 'TCP' });

    const svc = await eventually(() => c.core.readNamespacedService({ namespace: ns, name }), 'the Service');
    expect(svc.spec?.selector).toEqual({ 'tollgate.dev/model': name });
    expect(svc.spec?.ports?.find((p) => p.name === 'http')).toMatchObject({ port: 8080, targetPort: 'http' });
    expect(svc.metadata?.ownerReferences?.[0]?.uid).toBe(created.metadata.uid);

    const loading = await eventually(async () => {
      const m = await getModel(c, ns, name);
      return m?.status?.phase === 'Loading' && m;
    }, 'phase Loading');
    expect(cond(loading, 'SettingsValid')).toMatchObject({ status: 'True', reason: 'SettingsValid' });
    expect(cond(loading, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Loading',
      message: '0/2 replicas ready; pulling and loading the model',
    });
    expect(loading.status).toMatchObject({
      observedGeneration: 1,
      url: `http://${name}.${ns}.svc:8080`,
      contentType: 'np',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 4] }],
      outputs: [{ name: 'label', datatype: 'INT64', shape: [-1, 1] }],
      readyReplicas: 0,
    });
    expect(await client.get(redisKeys.modelRoute(name))).toBeNull();

    await setDeploymentReady(c, ns, name, 1);
    const ready = await eventually(async () => {
      const m = await getModel(c, ns, name);
      return m?.status?.phase === 'Ready' && m;
    }, 'phase Ready');
    expect(cond(ready, 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Ready',
      message: '1/2 replicas ready',
    });
    // It holds its name since it was made: recorded where no team may write.
    expect(ready.status?.nameHeldSince).toBe(
      new Date(created.metadata.creationTimestamp ?? '').toISOString(),
    );
    const route = await eventually(
      () => client.get(redisKeys.modelRoute(name)).then((v) => v ?? undefined),
      'the route',
    );
    // The gateway calls the Service's cluster IP, never its name (which its namespace could alias).
    expect(await openSealed(redisKeys.modelRoute(name), route)).toEqual({
      url: `http://${svc.spec?.clusterIP}:8080`,
      source: `model/${ns}/${name}`,
      // Its records are kept under its uid: a Model made again under the name starts clean.
      uid: created.metadata.uid,
    });
    await eventually(
      async () => routes.messages.includes(routeChangeTag(redisKeys.modelRoute(name))),
      'the route announced',
    );

    const reasons = await eventually(async () => {
      const r = (await eventsFor(c, ns, name)).map((e) => `${e.type}/${e.reason}`);
      return r.includes('Normal/Ready') && r;
    }, 'events');
    expect(reasons).toEqual(expect.arrayContaining(['Normal/Loading', 'Normal/Ready']));

    // The last replica goes away: the route goes with it.
    await setDeploymentReady(c, ns, name, 0);
    await eventually(
      async () => (await client.get(redisKeys.modelRoute(name))) === null,
      'the route removed',
    );
    // The route goes first (traffic stops at once), the status write follows it.
    const unready = await eventually(async () => {
      const m = await getModel(c, ns, name);
      return m?.status?.phase === 'Loading' && m;
    }, 'phase Loading');
    expect(cond(unready, 'Ready')).toMatchObject({ status: 'False' });
    routes.close();
  });

  test('a Service its namespace turns into an alias (ExternalName) is made again, and the route names its cluster IP, never a host', async () => {
    const name = 'model-alias';
    const dir = await modelFolder({ 'model-settings.json': npSettings(name), 'model.joblib': 'x' });
    await createModel(c, ns, name, { storageUri: `file://${dir}` });
    await eventually(() => c.apps.readNamespacedDeployment({ namespace: ns, name }), 'the Deployment');
    const before = await eventually(
      () => c.core.readNamespacedService({ namespace: ns, name }),
      'the Service',
    );
    await setDeploymentReady(c, ns, name, 1);
    const routedAt = async (url: string) =>
      eventually(async () => {
        const r = (await readSealed(client, redisKeys.modelRoute(name))) as { url?: string } | undefined;
        return r?.url === url && r;
      }, `routed at ${url}`);
    await routedAt(`http://${before.spec?.clusterIP}:8080`);

    // The team (edit in its namespace) makes the Service an alias to a host of its choosing.
    await c.core.patchNamespacedService({
      namespace: ns,
      name,
      body: [
        { op: 'replace', path: '/spec/type', value: 'ExternalName' },
        { op: 'add', path: '/spec/externalName', value: 'redis.tollgate.svc.cluster.local' },
      ],
    });
    const again = await eventually(async () => {
      const svc = await c.core.readNamespacedService({ namespace: ns, name }).catch(() => undefined);
      return (
        svc?.metadata?.uid !== before.metadata?.uid &&
        svc?.spec?.type === 'ClusterIP' &&
        (svc.spec.clusterIP ?? '') !== '' &&
        svc
      );
    }, 'the Service made again');
    expect(again.spec?.externalName).toBeUndefined();
    expect(again.metadata?.ownerReferences?.[0]?.kind).toBe('Model');
    await routedAt(`http://${again.spec?.clusterIP}:8080`);
    // The status still gives the Service's name: what a client in the cluster calls.
    expect((await getModel(c, ns, name))?.status?.url).toBe(`http://${name}.${ns}.svc:8080`);

    // Given another selector (or none: its cluster IP would go where Endpoints say): made again too.
    await c.core.patchNamespacedService({
      namespace: ns,
      name,
      body: [{ op: 'replace', path: '/spec/selector', value: { app: 'elsewhere' } }],
    });
    const third = await eventually(async () => {
      const svc = await c.core.readNamespacedService({ namespace: ns, name }).catch(() => undefined);
      return (
        svc?.metadata?.uid !== again.metadata?.uid &&
        svc?.spec?.selector?.['tollgate.dev/model'] === name &&
        svc
      );
    }, 'the Service made again with its selector');
    await routedAt(`http://${third.spec?.clusterIP}:8080`);
  });

  test('a model starting from zero lists its starting pod in its cold route: where it serves and its readiness probe, as the pod declares them', async () => {
    const name = 'model-starting';
    const dir = await modelFolder({ 'model-settings.json': npSettings(name), 'model.joblib': 'bytes' });
    await createModel(c, ns, name, {
      storageUri: `file://${dir}`,
      scaling: { minReplicas: 0, maxReplicas: 1 },
    });
    await client.publish(redisChannels.modelWake, JSON.stringify({ model: name, version: '' }));
    const d = await eventually(async () => {
      const x = await c.apps.readNamespacedDeployment({ namespace: ns, name }).catch(() => undefined);
      return (x?.spec?.replicas ?? 0) > 0 && x;
    }, 'a replica asked for');
    // The pod its ReplicaSet would make (no kubelet here), then its address and phase as one reports them.
    const template = d.spec!.template;
    const pod = await c.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: `${name}-abc12`, labels: template.metadata!.labels! }, spec: template.spec! },
    });
    const running = { ...pod, status: { phase: 'Running', podIP: '10.244.7.9' } };
    await c.core.replaceNamespacedPodStatus({ namespace: ns, name: pod.metadata!.name!, body: running });
    const route = await eventually(async () => {
      const r = await readSealed(client, redisKeys.modelRoute(name)).catch(() => undefined);
      return (r as { starting?: unknown[] } | undefined)?.starting !== undefined && r;
    }, 'the starting replica in the route');
    expect(route).toMatchObject({
      cold: true,
      starting: [
        {
          url: 'http://10.244.7.9:8080',
          probe: `http://10.244.7.9:8080/v2/models/${name}/ready`,
          until: expect.any(Number) as number,
        },
      ],
    });

    // Going away: no longer listed.
    await c.core.deleteNamespacedPod({ namespace: ns, name: pod.metadata!.name!, gracePeriodSeconds: 0 });
    await eventually(async () => {
      const r = (await readSealed(client, redisKeys.modelRoute(name))) as
        { starting?: unknown[] } | undefined;
      return r !== undefined && r.starting === undefined;
    }, 'the replica no longer listed');
  });

  test('a spec change rolls the Deployment out (new template hash)', async () => {
    const name = 'model-roll';
    const dir = await modelFolder({ 'model-settings.json': npSettings(name), 'model.joblib': 'x' });
    await createModel(c, ns, name, { storageUri: `file://${dir}` });
    const before = await eventually(
      () => c.apps.readNamespacedDeployment({ namespace: ns, name }),
      'the Deployment',
    );
    const hash = before.spec!.template.metadata!.annotations!['tollgate.dev/template-hash'];
    await c.custom.patchNamespacedCustomObject({
      ...modelRef,
      namespace: ns,
      name,
      body: [{ op: 'add', path: '/spec/env', value: [{ name: 'MLSERVER_PARALLEL_WORKERS', value: '2' }] }],
    });
    const after = await eventually(async () => {
      const d = await c.apps.readNamespacedDeployment({ namespace: ns, name });
      return d.spec!.template.metadata!.annotations!['tollgate.dev/template-hash'] !== hash && d;
    }, 'a new template hash');
    expect(after.spec!.template.spec!.containers[0]!.env).toContainEqual({
      name: 'MLSERVER_PARALLEL_WORKERS',
      value: '2',
    });
    await eventually(
      async () => (await getModel(c, ns, name))?.status?.observedGeneration === 2,
      'observedGeneration 2',
    );
  });

  test('a bad settings file: SettingsValid=False naming the field and the fix, phase Failed, a Warning event, no Deployment', async () => {
    const name = 'model-bad';
    const settings = JSON.parse(npSettings('model-other')) as Record<string, unknown>;
    const dir = await modelFolder({
      'model-settings.json': JSON.stringify({
        ...settings,
        inputs: [{ name: 'f', datatype: 'FLOAT', shape: [-1, 4] }],
      }),
      'model.joblib': 'x',
    });
    await createModel(c, ns, name, { storageUri: `file://${dir}` });
    const failed = await eventually(async () => {
      const m = await getModel(c, ns, name);
      return m?.status?.phase === 'Failed' && m;
    }, 'phase Failed');
    const sv = cond(failed, 'SettingsValid');
    expect(sv).toMatchObject({ status: 'False', reason: 'SettingsInvalid' });
    expect(sv?.message).toContain(
      'model-settings.json:name: is "model-other" but the Model is named "model-bad"; set "name": "model-bad"',
    );
    expect(sv?.message).toContain('model-settings.json:inputs[0].datatype: "FLOAT" is not a V2 datatype');
    expect(cond(failed, 'Ready')).toMatchObject({ status: 'False', reason: 'SettingsInvalid' });
    const events = await eventually(async () => {
      const e = await eventsFor(c, ns, name);
      return e.some((x) => x.reason === 'SettingsInvalid') && e;
    }, 'the Warning event');
    expect(events.find((x) => x.reason === 'SettingsInvalid')).toMatchObject({
      type: 'Warning',
      message: expect.stringContaining('set "name": "model-bad"'),
    });
    await expect(c.apps.readNamespacedDeployment({ namespace: ns, name })).rejects.toMatchObject({
      code: 404,
    });
  });

  test('a version whose workload would be another Model’s is not served, and never takes or removes the other’s', async () => {
    const settings = (name: string) => ({ 'model-settings.json': npSettings(name), 'model.joblib': 'x' });
    // model-pair-v2 first: its Deployment and Service are named model-pair-v2.
    await createModel(c, ns, 'model-pair-v2', {
      storageUri: `file://${await modelFolder(settings('model-pair-v2'))}`,
    });
    const theirs = await eventually(
      () => c.apps.readNamespacedDeployment({ namespace: ns, name: 'model-pair-v2' }),
      'model-pair-v2’s Deployment',
    );
    // model-pair's version v2 would be served by a workload of the same name: refused for it alone.
    const one = await modelFolder(settings('model-pair'));
    await createModel(c, ns, 'model-pair', {
      versions: [
        { name: 'v1', storageUri: `file://${one}` },
        { name: 'v2', storageUri: `file://${one}` },
      ],
      defaultVersion: 'v1',
    });
    await eventually(
      () => c.apps.readNamespacedDeployment({ namespace: ns, name: 'model-pair-v1' }),
      'model-pair’s v1 Deployment',
    );
    const refused = await eventually(async () => {
      const m = await getModel(c, ns, 'model-pair');
      const v2 = m?.status?.versions?.find((v) => v.name === 'v2');
      return v2?.phase === 'Failed' && v2;
    }, 'v2 Failed');
    expect(refused.message).toMatch(
      /the Deployment or Service model-pair-v2 in namespace .* serves another Model/,
    );
    // Its folder turned unreadable (which tears a version's workload down): the other's stays.
    await c.custom.patchNamespacedCustomObject({
      ...modelRef,
      namespace: ns,
      name: 'model-pair',
      body: [
        { op: 'replace', path: '/spec/versions/1/storageUri', value: 'file:///nonexistent/tollgate/pair' },
      ],
    });
    await eventually(async () => {
      const m = await getModel(c, ns, 'model-pair');
      return /does not exist/.test(m?.status?.versions?.find((v) => v.name === 'v2')?.message ?? '');
    }, 'v2’s folder missing');
    const after = await c.apps.readNamespacedDeployment({ namespace: ns, name: 'model-pair-v2' });
    expect(after.metadata?.uid).toBe(theirs.metadata?.uid);
    expect(after.metadata?.labels?.['tollgate.dev/model']).toBe('model-pair-v2');
    expect(after.spec?.template.spec?.containers.find((x) => x.name === 'pull')?.args?.[2]).toBe(
      '/mnt/models/model-pair-v2',
    );
    for (const name of ['model-pair', 'model-pair-v2'])
      await c.custom.deleteNamespacedCustomObject({ ...modelRef, namespace: ns, name });
  });

  test('two Models whose workload names meet, applied at once: the first keeps the name, the other is WorkloadNameTaken', async () => {
    // A namespace no operator watches: this driver is the only one making workloads there.
    const other = await namespace(c, 'op-claims');
    const driver = new KubeRuntimeDriver(
      c.kc,
      { pullerImage: PULLER_IMAGE },
      createLogger('claims-test', 'silent'),
      noRouteHold,
      other,
    );
    await driver.start(() => undefined);
    try {
      const pair = await createModel(c, other, 'model-race', { storageUri: 'file:///nonexistent/race' });
      const single = await createModel(c, other, 'model-race-v2', { storageUri: 'file:///nonexistent/race' });
      const plan = (model: Model, version: string | undefined): RuntimePlan => ({
        model,
        workload: 'model-race-v2',
        version,
        storageUri: 'file:///nonexistent/race',
        replicas: 0,
        settings: {
          name: model.metadata.name,
          implementation: 'mlserver_sklearn.SKLearnModel',
          parameters: { uri: './model.joblib' },
        },
        settingsGenerated: false,
        gateway: 'central',
        image: PULLER_IMAGE,
      });
      // Both before either Deployment reaches the informers.
      const [first, second] = await Promise.all([
        driver.apply(plan(pair, 'v2')),
        driver.apply(plan(single, undefined)),
      ]);
      expect(first.failure).toBeUndefined();
      expect(second.failure?.reason).toBe('WorkloadNameTaken');
      const made = await c.apps.readNamespacedDeployment({ namespace: other, name: 'model-race-v2' });
      expect(made.metadata?.labels?.['tollgate.dev/model']).toBe('model-race');
      // Asked again later, the answer stands; the loser's removal leaves the winner's workload.
      expect((await driver.apply(plan(single, undefined))).failure?.reason).toBe('WorkloadNameTaken');
      await driver.remove({ namespace: other, name: 'model-race-v2' }, 'model-race-v2');
      const kept = await c.apps.readNamespacedDeployment({ namespace: other, name: 'model-race-v2' });
      expect(kept.metadata?.uid).toBe(made.metadata?.uid);
      // A name whose Deployment the API server refused was never taken: the other Model gets it.
      const refused = { ...plan(pair, 'v2'), workload: 'model-race-v3', replicas: -1 };
      expect((await driver.apply(refused)).failure).toMatchObject({
        reason: 'WorkloadRejected',
        message: expect.stringContaining('spec.replicas'),
      });
      const free = await driver.apply({ ...plan(single, undefined), workload: 'model-race-v3' });
      expect(free.failure).toBeUndefined();
    } finally {
      await driver.stop();
    }
  });

  test('a workload the API server refuses (requests above limits) is a condition saying why; fixed, it is made', async () => {
    const name = 'model-limits';
    const dir = await modelFolder({ 'model-settings.json': npSettings(name), 'model.joblib': 'x' });
    await createModel(c, ns, name, {
      storageUri: `file://${dir}`,
      resources: { requests: { cpu: '2' }, limits: { cpu: '1' } },
    });
    const failed = await eventually(async () => {
      const m = await getModel(c, ns, name);
      return m?.status?.phase === 'Failed' && m;
    }, 'phase Failed');
    expect(cond(failed, 'Ready')).toMatchObject({ status: 'False', reason: 'WorkloadRejected' });
    // The API server's own words, and where to look.
    expect(cond(failed, 'Ready')?.message).toMatch(/must be less than or equal to cpu limit/);
    expect(cond(failed, 'Ready')?.message).toContain("fix what it names in the Model's spec");
    await eventually(async () => {
      const e = await eventsFor(c, ns, name);
      return e.some((x) => x.reason === 'WorkloadRejected' && x.type === 'Warning');
    }, 'the Warning event');
    await c.custom.patchNamespacedCustomObject({
      ...modelRef,
      namespace: ns,
      name,
      body: [{ op: 'replace', path: '/spec/resources/limits/cpu', value: '2' }],
    });
    const made = await eventually(
      () => c.apps.readNamespacedDeployment({ namespace: ns, name }),
      'the Deployment, once the spec is fixed',
    );
    expect(made.spec?.template.spec?.containers[0]?.resources?.limits?.['cpu']).toBe('2');
    await eventually(
      async () => cond(await getModel(c, ns, name), 'Ready')?.reason !== 'WorkloadRejected',
      'the refusal cleared',
    );
    // Refused again while it runs, with more replicas asked: the running template stays, and the
    // replicas (the autoscaler's to set, a wake from zero) follow all the same.
    const template = JSON.stringify(made.spec?.template);
    await c.custom.patchNamespacedCustomObject({
      ...modelRef,
      namespace: ns,
      name,
      body: [
        { op: 'replace', path: '/spec/resources/requests/cpu', value: '3' },
        { op: 'add', path: '/spec/replicas', value: 2 },
      ],
    });
    const scaled = await eventually(async () => {
      const d = await c.apps.readNamespacedDeployment({ namespace: ns, name });
      return d.spec?.replicas === 2 && d;
    }, 'the Deployment scaled to 2, its template refused');
    expect(JSON.stringify(scaled.spec?.template)).toBe(template);
    await eventually(
      async () => cond(await getModel(c, ns, name), 'Ready')?.reason === 'WorkloadRejected',
      'refused again',
    );
  });

  test('a missing folder is a condition, not a crash', async () => {
    const name = 'model-nofolder';
    await createModel(c, ns, name, { storageUri: 'file:///nonexistent/tollgate/model' });
    const m = await eventually(async () => {
      const x = await getModel(c, ns, name);
      return x?.status?.phase === 'Failed' && x;
    }, 'phase Failed');
    expect(cond(m, 'SettingsValid')).toMatchObject({
      status: 'False',
      reason: 'NoSuchFolder',
      message: expect.stringContaining('does not exist'),
    });
  });

  test('an MLflow folder is served by the MLflow runtime with settings the operator writes', async () => {
    const name = 'model-flow';
    const mlmodel =
      'flavors:\n  python_function:\n    loader_module: mlflow.sklearn\nsignature:\n  inputs: \'[{"type": "double", "name": "x"}]\'\n';
    const dir = await modelFolder({ MLmodel: mlmodel, 'model.pkl': 'x' });
    await createModel(c, ns, name, { storageUri: `file://${dir}` });
    const d = await eventually(
      () => c.apps.readNamespacedDeployment({ namespace: ns, name }),
      'the Deployment',
    );
    const args = d.spec!.template.spec!.containers.find((x) => x.name === 'pull')!.args!;
    expect(args.slice(0, 4)).toEqual(['pull', `file://${dir}`, `/mnt/models/${name}`, '--settings']);
    expect(JSON.parse(args[4]!)).toEqual({
      name,
      implementation: 'mlserver_mlflow.MLflowRuntime',
      parameters: { uri: './' },
    });
    expect(d.spec!.template.spec!.containers[0]!.image).toBe('seldonio/mlserver:1.7.1-mlflow');
    const m = await eventually(async () => {
      const x = await getModel(c, ns, name);
      return x?.status?.phase === 'Loading' && x;
    }, 'phase Loading');
    expect(cond(m, 'SettingsValid')).toMatchObject({ status: 'True', reason: 'MlflowModel' });
    expect(m.status?.inputs).toEqual([{ name: 'x', datatype: 'FP64', shape: [-1, 1] }]);
  });

  test('a Model with a workflow is also a bda route; deleting the Model removes both routes (finalizer)', async () => {
    const name = 'model-wf';
    // The administrator's records: both workflows alice's, served from this namespace.
    const [wf1, wf2] = [uniqueWorkflow('wf-1'), uniqueWorkflow('wf-2')];
    await createWorkflow(c, wf1, 'alice', [ns]);
    await createWorkflow(c, wf2, 'alice', [ns]);
    const dir = await modelFolder({ 'model-settings.json': npSettings(name), 'model.joblib': 'x' });
    await createModel(c, ns, name, { storageUri: `file://${dir}`, workflow: wf1 });
    await eventually(() => c.apps.readNamespacedDeployment({ namespace: ns, name }), 'the Deployment');
    await setDeploymentReady(c, ns, name, 1);
    const bda = await eventually(
      () => client.get(redisKeys.bdaRoute(wf1, name)).then((v) => v ?? undefined),
      'the bda route',
    );
    const ip = (await c.core.readNamespacedService({ namespace: ns, name })).spec?.clusterIP;
    expect(await openSealed(redisKeys.bdaRoute(wf1, name), bda)).toEqual({
      url: `http://${ip}:8080`,
      workflow: wf1,
      owner: 'alice',
      source: `model/${ns}/${name}`,
      uid: (await getModel(c, ns, name))?.metadata.uid,
    });
    expect(await readSealed(client, redisKeys.modelRoute(name))).toMatchObject({ workflow: wf1 });
    expect((await getModel(c, ns, name))?.metadata.finalizers).toContain('tollgate.dev/model-routes');

    // Moving it to another workflow moves the bda route.
    await c.custom.patchNamespacedCustomObject({
      ...modelRef,
      namespace: ns,
      name,
      body: [{ op: 'replace', path: '/spec/workflow', value: wf2 }],
    });
    await eventually(
      () => client.get(redisKeys.bdaRoute(wf2, name)).then((v) => v ?? undefined),
      'the new bda route',
    );
    await eventually(
      async () => (await client.get(redisKeys.bdaRoute(wf1, name))) === null,
      'the old bda route removed',
    );

    await c.custom.deleteNamespacedCustomObject({ ...modelRef, namespace: ns, name });
    await eventually(async () => (await getModel(c, ns, name)) === undefined, 'the Model gone');
    expect(await client.get(redisKeys.modelRoute(name))).toBeNull();
    expect(await client.get(redisKeys.bdaRoute(wf2, name))).toBeNull();
    await expect(c.apps.readNamespacedDeployment({ namespace: ns, name })).rejects.toMatchObject({
      code: 404,
    });
    await deleteWorkflow(c, wf1);
    await deleteWorkflow(c, wf2);
  });

  test('an s3:// folder is read with the credentials Secret, which the puller gets as its environment', async () => {
    const m = await minio();
    const env = {
      AWS_ACCESS_KEY_ID: m.accessKeyId,
      AWS_SECRET_ACCESS_KEY: m.secretAccessKey,
      AWS_ENDPOINT_URL: m.endpoint,
      AWS_REGION: m.region,
    };
    const s3 = s3ClientFromEnv(env);
    const bucket = `op-${ns}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const name = 'model-s3';
    await s3.send(
      new PutObjectCommand({ Bucket: bucket, Key: 'iris/model-settings.json', Body: npSettings(name) }),
    );
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'iris/model.joblib', Body: 'x' }));
    // A sibling folder sharing the prefix must not count as part of this one.
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'iris-old/model-settings.json', Body: '{}' }));
    await c.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'models-s3' }, stringData: env },
    });

    await createModel(c, ns, name, {
      storageUri: `s3://${bucket}/iris`,
      credentials: { secretName: 'models-s3' },
    });
    const d = await eventually(
      () => c.apps.readNamespacedDeployment({ namespace: ns, name }),
      'the Deployment',
    );
    expect(d.spec!.template.spec!.containers.find((x) => x.name === 'pull')!.envFrom).toEqual([
      { secretRef: { name: 'models-s3' } },
    ]);
    const ok = await eventually(async () => {
      const x = await getModel(c, ns, name);
      return x?.status?.phase === 'Loading' && x;
    }, 'phase Loading');
    expect(cond(ok, 'SettingsValid')).toMatchObject({ status: 'True' });

    // Without the Secret the storage cannot be read: a condition naming the Secret.
    await createModel(c, ns, 'model-nosecret', {
      storageUri: `s3://${bucket}/iris`,
      credentials: { secretName: 'absent' },
    });
    const failed = await eventually(async () => {
      const x = await getModel(c, ns, 'model-nosecret');
      return x?.status?.phase === 'Failed' && x;
    }, 'phase Failed');
    expect(cond(failed, 'SettingsValid')).toMatchObject({
      status: 'False',
      reason: 'CredentialsNotFound',
      message: expect.stringContaining('"absent" does not exist'),
    });

    // A bucket that does not exist.
    await createModel(c, ns, 'model-nobucket', {
      storageUri: 's3://no-such-bucket-tg/iris',
      credentials: { secretName: 'models-s3' },
    });
    const nob = await eventually(async () => {
      const x = await getModel(c, ns, 'model-nobucket');
      return x?.status?.phase === 'Failed' && x;
    }, 'phase Failed');
    expect(cond(nob, 'SettingsValid')).toMatchObject({ reason: 'NoSuchBucket' });

    // The operator never lends a team its own identity: with its own environment holding keys that
    // read this very bucket, a Model without a Secret, or with a Secret that only redirects the
    // endpoint (where the operator's signed requests would go), is refused, not read.
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      await c.core.createNamespacedSecret({
        namespace: ns,
        body: { metadata: { name: 'endpoint-only' }, stringData: { AWS_ENDPOINT_URL: m.endpoint } },
      });
      for (const [model, credentials, says] of [
        ['model-nocreds', undefined, 'spec.credentials.secretName'],
        [
          'model-endpoint-only',
          { secretName: 'endpoint-only' },
          'has no AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY',
        ],
      ] as const) {
        await createModel(c, ns, model, {
          storageUri: `s3://${bucket}/iris`,
          ...(credentials ? { credentials } : {}),
        });
        const refused = await eventually(async () => {
          const x = await getModel(c, ns, model);
          return x?.status?.phase === 'Failed' && x;
        }, `${model} Failed`);
        expect(cond(refused, 'SettingsValid')).toMatchObject({
          status: 'False',
          reason: 'CredentialsRequired',
          message: expect.stringContaining(says),
        });
        await expect(c.apps.readNamespacedDeployment({ namespace: ns, name: model })).rejects.toThrow();
      }
    } finally {
      for (const k of Object.keys(env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });

  test('a Secret the operator may not read (rbac.readSecrets off): refused saying so, not retried in silence', async () => {
    // The same API server, as an account no role grants anything.
    const config = JSON.parse(c.kc.exportConfig()) as { users: Array<{ user: Record<string, unknown> }> };
    for (const u of config.users) u.user['as'] = 'system:serviceaccount:nowhere:nobody';
    const kc = new KubeConfig();
    kc.loadFromString(JSON.stringify(config));
    await expect(new KubeSecretCredentials(kc).envFor(ns, 'store', 's3://bucket/m')).rejects.toMatchObject({
      code: 'credentials_not_readable',
      message: expect.stringContaining("the chart's rbac.readSecrets is false"),
    });
  });

  test('on a cluster a file:// folder is the operator’s own disk: refused, with what to use instead', async () => {
    const credentials = new KubeSecretCredentials(c.kc);
    await expect(credentials.envFor(ns, undefined, 'file:///var/run/secrets')).rejects.toMatchObject({
      code: 'storage_not_allowed',
      message: expect.stringContaining('s3://<bucket>/<folder>'),
    });
    await expect(credentials.envFor(ns, 'x', 'ftp://host/x')).rejects.toMatchObject({
      code: 'invalid_storage_uri',
    });
  });

  test('on a cluster a Model’s endpoint may not be the operator’s own machine or a metadata service', async () => {
    const credentials = new KubeSecretCredentials(c.kc);
    const secret = async (name: string, endpoint: string) =>
      c.core.createNamespacedSecret({
        namespace: ns,
        body: {
          metadata: { name },
          stringData: { AWS_ACCESS_KEY_ID: 'k', AWS_SECRET_ACCESS_KEY: 's', AWS_ENDPOINT_URL: endpoint },
        },
      });
    for (const [name, endpoint, address] of [
      ['metadata', 'http://169.254.169.254/latest', '169.254.169.254'],
      ['loopback', 'http://127.0.0.1:9000', '127.0.0.1'],
      ['mapped', 'http://[::ffff:127.0.0.1]:9000', '::ffff:7f00:1'],
      ['by-name', 'http://localhost:9000', /127\.0\.0\.1|::1/],
      ['alibaba', 'http://100.100.100.200/', '100.100.100.200'],
    ] as const) {
      await secret(`ep-${name}`, endpoint);
      await expect(credentials.envFor(ns, `ep-${name}`, 's3://bucket/x')).rejects.toMatchObject({
        code: 'storage_not_allowed',
        message: expect.stringMatching(typeof address === 'string' ? `is ${address}` : address),
      });
    }
    // The bucket may not become part of the host (`<bucket>.<endpoint>`, a host never checked).
    await c.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'ep-vhost' },
        stringData: {
          AWS_ACCESS_KEY_ID: 'k',
          AWS_SECRET_ACCESS_KEY: 's',
          AWS_ENDPOINT_URL: 'http://10.96.0.20:9000',
          AWS_S3_FORCE_PATH_STYLE: 'false',
        },
      },
    });
    await expect(credentials.envFor(ns, 'ep-vhost', 's3://169-254-169-254/x')).rejects.toMatchObject({
      code: 'storage_not_allowed',
      message: expect.stringContaining('AWS_S3_FORCE_PATH_STYLE'),
    });
    await secret('ep-store', 'http://10.96.0.20:9000');
    await expect(credentials.envFor(ns, 'ep-store', 's3://bucket/x')).resolves.toMatchObject({
      AWS_ENDPOINT_URL: 'http://10.96.0.20:9000',
    });
  });

  test('in Tollgate’s own namespace a Model names only a Secret an administrator labelled for Models', async () => {
    // As the platform API's Models live: beside Tollgate's own Secrets (Redis passwords, audit keys).
    const credentials = new KubeSecretCredentials(c.kc, { ownNamespace: ns });
    const stringData = {
      AWS_ACCESS_KEY_ID: 'k',
      AWS_SECRET_ACCESS_KEY: 's',
      AWS_ENDPOINT_URL: 'http://10.96.0.21:9000',
    };
    await c.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'own-audit' }, stringData },
    });
    await expect(credentials.envFor(ns, 'own-audit', 's3://bucket/x')).rejects.toMatchObject({
      code: 'credentials_not_allowed',
      message: expect.stringContaining('labelled tollgate.dev/model-credentials=true'),
    });
    await c.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'own-models', labels: { 'tollgate.dev/model-credentials': 'true' } },
        stringData,
      },
    });
    await expect(credentials.envFor(ns, 'own-models', 's3://bucket/x', 'mallory')).resolves.toMatchObject({
      AWS_ENDPOINT_URL: 'http://10.96.0.21:9000',
    });
    // One an administrator made for some users' Models only: named by another's, it is refused.
    await c.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: {
          name: 'alice-models',
          labels: { 'tollgate.dev/model-credentials': 'true' },
          annotations: { 'tollgate.dev/model-owners': 'bob, alice' },
        },
        stringData,
      },
    });
    await expect(credentials.envFor(ns, 'alice-models', 's3://bucket/x', 'alice')).resolves.toMatchObject({
      AWS_ACCESS_KEY_ID: 'k',
    });
    for (const owner of ['mallory', 'alic', undefined]) {
      await expect(credentials.envFor(ns, 'alice-models', 's3://bucket/x', owner)).rejects.toMatchObject({
        code: 'credentials_not_allowed',
        message: expect.stringContaining('tollgate.dev/model-owners annotation lists'),
      });
    }
    // Any other namespace's Models name their own namespace's Secrets, labelled or not.
    await expect(
      new KubeSecretCredentials(c.kc, { ownNamespace: 'tollgate-system' }).envFor(
        ns,
        'own-audit',
        's3://bucket/x',
      ),
    ).resolves.toMatchObject({ AWS_ACCESS_KEY_ID: 'k' });
  });

  test('a store’s name is checked again at every connection: one re-pointed at the operator’s machine reaches nothing', async () => {
    // A name that passed the check may resolve elsewhere when the operator connects (DNS
    // rebinding); `localhost` resolving to loopback stands for it, with a real MinIO listening there.
    const m = await minio();
    const env = {
      AWS_ACCESS_KEY_ID: m.accessKeyId,
      AWS_SECRET_ACCESS_KEY: m.secretAccessKey,
      AWS_REGION: m.region,
      AWS_ENDPOINT_URL: m.endpoint.replace('127.0.0.1', 'localhost'),
    };
    const bucket = `rebind-${Date.now()}`;
    await s3ClientFromEnv(env).send(new CreateBucketCommand({ Bucket: bucket }));
    const { refusedAddress } = new KubeSecretCredentials(c.kc);
    expect(refusedAddress).toBeDefined();
    const guarded = s3ClientFromEnv(env, { refusedAddress: refusedAddress!, maxAttempts: 1 });
    await expect(guarded.send(new PutObjectCommand({ Bucket: bucket, Key: 'x', Body: 'x' }))).rejects.toThrow(
      /localhost resolves to (127\.0\.0\.1|::1), which a Model's store may not be/,
    );
    // Tests' operators beside their store (sameMachine) connect as before.
    expect(new KubeSecretCredentials(c.kc, { sameMachine: true }).refusedAddress).toBeUndefined();
  });
});
