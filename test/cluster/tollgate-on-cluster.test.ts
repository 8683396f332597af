// Tollgate on a real node: installed as the README says (CRDs with kubectl, the chart with helm,
// images built from the repository's Dockerfiles), a model pulled from MinIO by the init
// container and served by MLServer, keys, a workflow Service, and the faults a cluster has.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { cluster, clusterMinio, prometheus } from '../harness/index.js';
import { panelsWithoutSeries } from '../harness/dashboard.js';
import { steadyLoad } from '../harness/steady-load.js';
import { tritonGrpc, TRITON_GRPC_ROWS } from '../harness/grpc-clients.js';
import { tritonGrpcRefusals } from '../harness/grpc-expectations.js';
import {
  applyDoc,
  call,
  callHost,
  createKey,
  deploymentReplicas,
  echoWorkflowService,
  eventually,
  workflowRecord,
  INGRESS_HOST,
  installTollgate,
  irisInfer,
  irisModel,
  kubectlFor,
  modelDoc,
  NAMESPACE,
  podNames,
  readyPodIps,
  wakeUps,
  RELEASE,
  scaledModelDoc,
  storageSecret,
  versionedModelDoc,
  type Installed,
  type IrisModel,
} from './support.js';

const MODEL = 'model-iris';
const MODELS_NS = 'ml-team';
const BUCKET = 'cluster-models';

let t: Installed;
let iris: IrisModel;
let logs: S3Client | undefined;
const LOGS_BUCKET = 'cluster-payload-logs';
const times: Record<string, number> = {};

const model = (name: string, prefix: string): unknown =>
  modelDoc(name, MODELS_NS, `s3://${BUCKET}/${prefix}`);

async function modelJson(name: string): Promise<{
  status?: {
    phase?: string;
    conditions?: Array<{ type: string; status: string; message?: string }>;
  };
}> {
  return JSON.parse(await t.kubectl('-n', MODELS_NS, 'get', 'model', name, '-o', 'json')) as never;
}

const condition = async (name: string, type: string) =>
  (await modelJson(name)).status?.conditions?.find((c) => c.type === type);

beforeAll(async () => {
  const started = Date.now();
  // The administrator's payload log bucket, reached with the gateway's storage Secret (made
  // before the install: the gateway pods read it at start).
  const c = await cluster();
  const s3 = await clusterMinio();
  logs = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  await logs.send(new CreateBucketCommand({ Bucket: LOGS_BUCKET }));
  await kubectlFor(c, 'create', 'namespace', NAMESPACE);
  await storageSecret(c, NAMESPACE, s3);
  t = await installTollgate([
    'audit.credentialsSecret=minio',
    `models.payloadLogs.storageUri=s3://${LOGS_BUCKET}/payloads`,
    'models.payloadLogs.intervalSeconds=2',
  ]);
  times['install (cluster start + helm install, every pod Ready)'] = Date.now() - started;
  times['of which the cluster start (node Ready, images imported, CoreDNS and Traefik Ready)'] = t.c.startMs;
  iris = await irisModel(s3);
  await iris.upload(BUCKET, 'iris/v1', MODEL);
  // The same model under another name, for the Model applied after a leader change.
  await iris.upload(BUCKET, 'after/v1', 'model-after');
  // A folder whose settings name another model: the operator must refuse it before any pod.
  await iris.upload(BUCKET, 'bad/v1', 'model-other');
  await t.kubectl('create', 'namespace', MODELS_NS);
  await storageSecret(t.c, MODELS_NS, s3);
  // The administrator's record: alice's workflow `fraud` (the Models' and the echo Service's).
  await workflowRecord(t.c, 'fraud', 'alice', [MODELS_NS]);
}, 900_000);

afterAll(async () => {
  logs?.destroy();
  await t?.cleanup(MODELS_NS);
  await iris?.close();
  process.stderr.write(
    `cluster figures:\n${Object.entries(times)
      .map(([k, v]) => `  ${k}: ${(v / 1000).toFixed(1)} s`)
      .join('\n')}\n`,
  );
});

describe('install as the README says', () => {
  it('runs every pod of the release Ready, from images built from the repository', async () => {
    const pods = JSON.parse(await t.kubectl('-n', NAMESPACE, 'get', 'pods', '-o', 'json')) as {
      items: Array<{
        metadata: { name: string };
        spec: { containers: Array<{ image: string }> };
        status: { phase: string; conditions?: Array<{ type: string; status: string }> };
      }>;
    };
    const names = pods.items.map((p) => p.metadata.name);
    expect(names.filter((n) => n.startsWith(`${RELEASE}-gateway-`))).toHaveLength(2);
    expect(names.filter((n) => n.startsWith(`${RELEASE}-operator-`))).toHaveLength(2);
    expect(names.filter((n) => n.startsWith(`${RELEASE}-redis-`))).toHaveLength(1);
    for (const p of pods.items) {
      expect(p.status.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    }
    const images = new Set(pods.items.flatMap((p) => p.spec.containers.map((c) => c.image)));
    expect(images).toEqual(new Set(['tollgate/tollgate:dev', 'tollgate/redis:test']));
  });

  it('answers health on the gateway Service and resolves cluster names inside pods', async () => {
    const live = await call(`${t.gateway}/v2/health/live`);
    expect(live.status).toBe(200);
    // The gateway pods reach Redis by its Service name: CoreDNS answers inside the cluster.
    const ready = await call(`${t.gateway}/readyz`);
    expect(ready.status).toBe(200);
  });
});

describe('a model from object storage', () => {
  it('is pulled beside its runtime, served by MLServer and answers as scikit-learn does', async () => {
    const applied = Date.now();
    // Its team logs every call, the features redacted; where is the administrator's.
    const doc = model(MODEL, 'iris/v1') as { spec: Record<string, unknown> };
    doc.spec['logging'] = { sampleRate: 1, redact: ['features'] };
    await applyDoc(t.c, doc);
    await eventually(
      'Model Ready',
      async () => ((await modelJson(MODEL)).status?.phase === 'Ready' ? true : undefined),
      300_000,
    );
    const { key } = await createKey(t, 'alice', { module: 'platform', roles: ['models:inference'] });
    const infer = async () =>
      call(`${t.gateway}/v2/models/${MODEL}/infer`, {
        headers: { authorization: `Apikey ${key}` },
        body: irisInfer(iris.expected.rows),
      });
    const first = await eventually('first answer', async () => {
      const r = await infer();
      return r.status === 200 ? r : undefined;
    });
    times['kubectl apply of a Model to its first answer'] = Date.now() - applied;
    const outputs = first.body['outputs'] as Array<{ data: number[] }>;
    expect(outputs[0]!.data).toEqual(iris.expected.predictions);

    // The puller ran beside the runtime and left its summary in the log.
    const pod = (
      await t.kubectl('-n', MODELS_NS, 'get', 'pods', '-l', `tollgate.dev/model=${MODEL}`, '-o', 'name')
    ).trim();
    const pullLog = await t.kubectl('-n', MODELS_NS, 'logs', pod, '-c', 'pull');
    expect(pullLog).toMatch(/model\.joblib/);
    // kubectl reads as the README shows.
    const table = await t.kubectl('-n', MODELS_NS, 'get', 'models');
    expect(table).toMatch(new RegExp(`${MODEL}\\s+Ready`));
    expect((await condition(MODEL, 'SettingsValid'))?.status).toBe('True');
    expect((await condition(MODEL, 'Ready'))?.status).toBe('True');
    const events = await t.kubectl(
      '-n',
      MODELS_NS,
      'get',
      'events',
      '--field-selector',
      `involvedObject.name=${MODEL}`,
    );
    expect(events).toMatch(/Deployed|Ready|Created/);

    // The calls are in the administrator's bucket, partitioned under the Model's own uid (a Model
    // made again under the name writes beside none of these), the named input redacted.
    const uid = (
      JSON.parse(await t.kubectl('-n', MODELS_NS, 'get', 'model', MODEL, '-o', 'json')) as {
        metadata: { uid: string };
      }
    ).metadata.uid;
    const record = await eventually(
      'a payload log record',
      async () => {
        const listed = await logs?.send(
          new ListObjectsV2Command({
            Bucket: LOGS_BUCKET,
            Prefix: `payloads/namespace=${MODELS_NS}/model=${MODEL}/uid=${uid}/`,
          }),
        );
        const name = listed?.Contents?.[0]?.Key;
        if (name === undefined) return undefined;
        expect(name).toMatch(
          new RegExp(
            `^payloads/namespace=${MODELS_NS}/model=${MODEL}/uid=${uid}/date=\\d{4}-\\d{2}-\\d{2}/hour=\\d{2}/[\\w.-]+\\.jsonl$`,
          ),
        );
        const text = await (
          await logs?.send(new GetObjectCommand({ Bucket: LOGS_BUCKET, Key: name }))
        )?.Body?.transformToString();
        return (text ?? '')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((r) => r['status'] === 200);
      },
      60_000,
    );
    const logged = (record['response'] as { outputs: Array<{ name: string; data: unknown }> }).outputs;
    expect((record['request'] as { inputs: Array<{ data: unknown }> }).inputs[0]?.data).toBe('[redacted]');
    expect(logged.find((o) => o.name === 'predict')?.data).toEqual(iris.expected.predictions);
    expect(JSON.stringify(record)).not.toContain(key);
  });

  it('answers V2 over gRPC on the gateway Service: tritonclient.grpc, with the keys and codes of REST', async () => {
    const services = JSON.parse(await t.kubectl('-n', NAMESPACE, 'get', 'svc', '-o', 'json')) as {
      items: Array<{ spec: { ports?: Array<{ name?: string; nodePort?: number; appProtocol?: string }> } }>;
    };
    const grpc = services.items.flatMap((s) => s.spec.ports ?? []).find((p) => p.name === 'grpc');
    expect(grpc?.appProtocol).toBe('kubernetes.io/h2c');
    const { key } = await createKey(t, 'alice', { module: 'platform', roles: ['models:inference'] });
    const rest = await call(`${t.gateway}/v2/models/${MODEL}/infer`, {
      headers: { authorization: `Apikey ${key}` },
      body: irisInfer(TRITON_GRPC_ROWS),
    });
    const expected = (rest.body['outputs'] as Array<{ name: string; data: number[] }>).find(
      (o) => o.name === 'predict',
    )?.data;
    const got = await tritonGrpc(`${t.c.nodeIp}:${String(grpc?.nodePort)}`, MODEL, key);
    expect([got.live, got.ready, got.model_ready, got.model_name]).toEqual([true, true, true, MODEL]);
    expect(got.predict).toEqual(expected);
    expect(got.proba_shape).toEqual([2, 3]);
    expect(got.refused).toEqual(tritonGrpcRefusals(false));
  });

  it('refuses a bad model-settings.json with SettingsValid=False and starts no pod', async () => {
    await applyDoc(t.c, model('model-bad', 'bad/v1'));
    const cond = await eventually('SettingsValid=False', async () => {
      const c = await condition('model-bad', 'SettingsValid');
      return c?.status === 'False' ? c : undefined;
    });
    expect(cond.message).toMatch(/model-other/);
    expect(cond.message).toMatch(/model-bad/);
    const pods = await t.kubectl(
      '-n',
      MODELS_NS,
      'get',
      'pods',
      '-l',
      'tollgate.dev/model=model-bad',
      '-o',
      'name',
    );
    expect(pods.trim()).toBe('');
    await t.kubectl('-n', MODELS_NS, 'delete', 'model', 'model-bad', '--wait=true');
  });
});

describe('the dashboard against the cluster', () => {
  it('has series for every panel from a real Prometheus scraping the gateway and model pods', async () => {
    const gateways = await readyPodIps(t, NAMESPACE, 'app.kubernetes.io/component=gateway');
    const runtimes = await readyPodIps(t, MODELS_NS, `tollgate.dev/model=${MODEL}`);
    expect([gateways.length, runtimes.length]).toEqual([2, 1]);
    // Where the pods' prometheus.io annotations point: the gateway's metrics port (its traffic port
    // does not serve them), MLServer's metrics port.
    for (const ip of gateways) expect((await call(`http://${ip}:8080/metrics`)).status).toBe(404);
    const prom = await prometheus('cluster-dashboard', [
      ...gateways.map((ip) => `http://${ip}:9090/metrics`),
      ...runtimes.map((ip) => `http://${ip}:8082/metrics`),
    ]);
    const { key } = await createKey(t, 'alice', { module: 'platform', roles: ['models:inference'] });
    const { key: bda } = await createKey(t, 'alice', { module: 'bda', roles: ['fraud'] });
    const infer = (body: unknown) =>
      call(`${t.gateway}/v2/models/${MODEL}/infer`, { headers: { authorization: `Apikey ${key}` }, body });
    const workflow = (k: string) =>
      call(`${t.gateway}/events/bda/fraud/${MODEL}/v2/models/${MODEL}/infer`, {
        headers: { authorization: `Apikey ${k}` },
        body: irisInfer(iris.expected.rows),
      });
    const { panels, empty } = await panelsWithoutSeries(
      prom.url,
      async () => {
        for (let i = 0; i < 5; i++) expect((await infer(irisInfer(iris.expected.rows))).status).toBe(200);
        expect(
          (await infer({ inputs: [{ name: 'features', datatype: 'FP64', shape: [2, 4], data: [1, 2, 3] }] }))
            .status,
        ).toBe(400);
        expect(
          (await infer({ ...(irisInfer(iris.expected.rows) as object), outputs: [{ name: 'scores' }] }))
            .status,
        ).toBe(400);
        expect((await workflow(bda)).status).toBe(200);
        expect((await workflow('tgb_not-a-key')).status).toBe(401);
      },
      120_000,
    );
    expect(panels).toBeGreaterThanOrEqual(10);
    expect(empty).toEqual([]);
  });
});

describe('versions on the cluster', () => {
  const NAME = 'model-ver';
  interface Versioned {
    status?: { defaultVersion?: string; versions?: Array<{ name: string; phase: string; traffic?: number }> };
  }
  const doc = (spec: Record<string, unknown>) => versionedModelDoc(NAME, MODELS_NS, BUCKET, 'ver', spec);
  const read = async () =>
    JSON.parse(await t.kubectl('-n', MODELS_NS, 'get', 'model', NAME, '-o', 'json')) as Versioned;

  it('serves each version from its own pods; a canary shift, a promotion and a rollback under load lose no call', async () => {
    await iris.upload(BUCKET, 'ver/1', NAME);
    await iris.upload(BUCKET, 'ver/2', NAME);
    const applied = Date.now();
    await applyDoc(t.c, doc({ defaultVersion: '1' }));
    await eventually(
      'both versions Ready',
      async () => {
        const v = (await read()).status?.versions ?? [];
        return v.length === 2 && v.every((x) => x.phase === 'Ready') ? true : undefined;
      },
      300_000,
    );
    times['kubectl apply of a two-version Model to both versions Ready'] = Date.now() - applied;
    const deployments = await t.kubectl(
      '-n',
      MODELS_NS,
      'get',
      'deployments',
      '-l',
      `tollgate.dev/model=${NAME}`,
      '-o',
      'name',
    );
    expect(deployments.trim().split('\n').sort()).toEqual([
      `deployment.apps/${NAME}-1`,
      `deployment.apps/${NAME}-2`,
    ]);

    const { key } = await createKey(t, 'vera', { module: 'platform', roles: ['models:inference'] });
    const auth = { authorization: `Apikey ${key}` };
    const v2 = await eventually('version 2 answers', async () => {
      const r = await call(`${t.gateway}/v2/models/${NAME}/versions/2/infer`, {
        headers: auth,
        body: irisInfer(iris.expected.rows),
      });
      return r.status === 200 ? r : undefined;
    });
    expect(v2.body['model_version']).toBe('2');
    await eventually('the default answers', async () => {
      const r = await call(`${t.gateway}/v2/models/${NAME}/infer`, {
        headers: auth,
        body: irisInfer(iris.expected.rows),
      });
      return r.status === 200 ? r : undefined;
    });
    expect((v2.body['outputs'] as Array<{ data: number[] }>)[0]!.data).toEqual(iris.expected.predictions);

    const load = steadyLoad(async () => {
      const r = await call(`${t.gateway}/v2/models/${NAME}/infer`, {
        headers: auth,
        body: irisInfer([iris.expected.rows[0]!]),
      });
      return {
        status: r.status,
        label: String(r.body['model_version'] ?? ''),
        detail: JSON.stringify(r.body),
      };
    });
    // Each edit is logged with its time, to place a failure (they carry theirs) among them.
    const patch = (spec: unknown) => {
      process.stderr.write(`${new Date().toISOString()} versions: patch ${JSON.stringify(spec)}\n`);
      return t.kubectl(
        '-n',
        MODELS_NS,
        'patch',
        'model',
        NAME,
        '--type=merge',
        '-p',
        JSON.stringify({ spec }),
      );
    };
    try {
      await load.settles(['1']);
      await patch({ traffic: [{ version: '2', percent: 50 }] });
      await load.settles(['1', '2'], 100);
      await patch({ defaultVersion: '2', traffic: null });
      await load.settles(['2']);
      await patch({ defaultVersion: '1' });
      await load.settles(['1']);
      // Removing version 2: out of the routes at once, its pods drain, then go.
      await patch({ versions: [{ name: '1', storageUri: `s3://${BUCKET}/ver/1` }] });
      await eventually('version 2 draining', async () =>
        (await read()).status?.versions?.find((v) => v.name === '2')?.phase === 'Draining' ? true : undefined,
      );
      await eventually(
        'version 2 gone',
        async () =>
          (
            await t.kubectl(
              '-n',
              MODELS_NS,
              'get',
              'deployments',
              '-l',
              `tollgate.dev/model=${NAME}`,
              '-o',
              'name',
            )
          ).trim() === `deployment.apps/${NAME}-1`
            ? true
            : undefined,
        120_000,
      );
      await load.settles(['1']);
    } finally {
      const tally = await load.stop();
      process.stderr.write(`versions under load on the cluster: ${JSON.stringify(tally)}\n`);
      expect(tally.failures).toEqual([]);
      expect(tally.total).toBeGreaterThan(200);
    }
  });

  it('a canary that fails every call is rolled back on its own, judged on both gateway replicas, and no caller sees a failure', async () => {
    await iris.uploadBroken(BUCKET, 'ver/bad', NAME);
    const { key } = await createKey(t, 'vera', { module: 'platform', roles: ['models:inference'] });
    const auth = { authorization: `Apikey ${key}` };
    const load = steadyLoad(async () => {
      const r = await call(`${t.gateway}/v2/models/${NAME}/infer`, {
        headers: auth,
        body: irisInfer([iris.expected.rows[0]!]),
      });
      return {
        status: r.status,
        label: String(r.body['model_version'] ?? ''),
        detail: JSON.stringify(r.body),
      };
    });
    try {
      await load.settles(['1']);
      const started = Date.now();
      await t.kubectl(
        '-n',
        MODELS_NS,
        'patch',
        'model',
        NAME,
        '--type=merge',
        '-p',
        JSON.stringify({
          spec: {
            versions: [
              { name: '1', storageUri: `s3://${BUCKET}/ver/1` },
              { name: 'bad', storageUri: `s3://${BUCKET}/ver/bad` },
            ],
            rollout: { version: 'bad', steps: [50], stepSeconds: 5, minCalls: 10, maxErrorRate: 0.1 },
          },
        }),
      );
      interface Rolled {
        status?: {
          rollout?: { phase: string; weight?: number; errorRate?: number; message?: string };
          conditions?: Array<{ type: string; status: string; reason: string }>;
          versions?: Array<{ name: string; traffic?: number }>;
        };
      }
      const rolled = await eventually(
        'rolled back',
        async () => {
          const m = JSON.parse(
            await t.kubectl('-n', MODELS_NS, 'get', 'model', NAME, '-o', 'json'),
          ) as Rolled;
          return m.status?.rollout?.phase === 'RolledBack' ? m : undefined;
        },
        300_000,
      );
      times['bad canary applied -> rolled back by the operator'] = Date.now() - started;
      expect(rolled.status?.rollout).toMatchObject({ phase: 'RolledBack', weight: 0 });
      expect(rolled.status?.rollout?.errorRate).toBeGreaterThan(0.1);
      expect(rolled.status?.conditions?.find((c) => c.type === 'Rollout')).toMatchObject({
        status: 'False',
        reason: 'RolledBack',
      });
      expect(rolled.status?.versions?.find((v) => v.name === 'bad')?.traffic).toBe(0);
      const events = await t.kubectl(
        '-n',
        MODELS_NS,
        'get',
        'events',
        '--field-selector',
        `involvedObject.name=${NAME},reason=RolledBack`,
        '-o',
        'jsonpath={.items[*].message}',
      );
      expect(events).toContain('above spec.rollout.maxErrorRate 10%');
      await load.settles(['1']);
    } finally {
      const tally = await load.stop();
      process.stderr.write(`bad canary on the cluster: ${JSON.stringify(tally)}\n`);
      expect(tally.failures).toEqual([]);
      expect(Object.keys(tally.byStatus)).toEqual(['200']);
      expect(Object.keys(tally.byLabel)).toEqual(['1']);
    }
  });

  it('a bad canary limited to one identity takes only its calls, is rolled back on its own, and no caller sees a failure', async () => {
    const made = await call(`${t.gateway}/api/v1/identities`, {
      headers: { authorization: `Bearer ${await t.token('vera')}` },
      body: { name: 'acme-cluster' },
    });
    expect(made.status).toBe(201);
    const customer = await createKey(t, 'vera', {
      module: 'platform',
      roles: ['models:inference'],
      identity: 'acme-cluster',
    });
    const others = await createKey(t, 'vera', { module: 'platform', roles: ['models:inference'] });
    const infer = async (key: string) => {
      const r = await call(`${t.gateway}/v2/models/${NAME}/infer`, {
        headers: { authorization: `Apikey ${key}` },
        body: irisInfer([iris.expected.rows[0]!]),
      });
      return {
        status: r.status,
        label: String(r.body['model_version'] ?? ''),
        detail: JSON.stringify(r.body),
      };
    };
    // The customer's key answers (it is in every replica's index) before the canary comes in.
    await eventually('the customer key answers', async () =>
      (await infer(customer.key)).status === 200 ? true : undefined,
    );
    const load = steadyLoad(() => infer(others.key));
    const customerAnswers: string[] = [];
    try {
      await load.settles(['1']);
      // The figures are kept in 10-second buckets: a step counts its first bucket whole, so the
      // calls of the test before, to the same canary, are left a bucket behind.
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      await t.kubectl(
        '-n',
        MODELS_NS,
        'patch',
        'model',
        NAME,
        '--type=merge',
        '-p',
        JSON.stringify({
          spec: {
            rollout: {
              version: 'bad',
              cohort: { identities: ['acme-cluster'] },
              steps: [50],
              stepSeconds: 5,
              minCalls: 10,
              maxErrorRate: 0.1,
            },
          },
        }),
      );
      interface Rolled {
        status?: {
          rollout?: {
            phase: string;
            cohort?: string;
            calls?: number;
            baseline?: { calls?: number };
            message?: string;
          };
          conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
        };
      }
      const rolled = await eventually(
        'the cohort canary rolled back',
        async () => {
          const answer = await infer(customer.key);
          customerAnswers.push(`${answer.status} ${answer.label}`);
          const m = JSON.parse(
            await t.kubectl('-n', MODELS_NS, 'get', 'model', NAME, '-o', 'json'),
          ) as Rolled;
          const r = m.status?.rollout;
          return r?.phase === 'RolledBack' && r.cohort !== undefined ? m : undefined;
        },
        300_000,
      );
      const r = rolled.status?.rollout;
      expect(r).toMatchObject({ phase: 'RolledBack', cohort: 'identities acme-cluster' });
      // Only the customer's calls reached it: the others' steady load, far more calls, none.
      expect(r?.calls).toBeGreaterThanOrEqual(10);
      expect(r?.calls).toBeLessThanOrEqual(customerAnswers.length);
      // And the customer, too, saw no failure: version 1 answered what the canary failed.
      expect([...new Set(customerAnswers)]).toEqual(['200 1']);
      expect(r?.baseline?.calls).toBeGreaterThan(0);
      expect(rolled.status?.conditions?.find((c) => c.type === 'Rollout')?.message).toContain(
        '(cohort: identities acme-cluster)',
      );
      const events = await t.kubectl(
        '-n',
        MODELS_NS,
        'get',
        'events',
        '--field-selector',
        `involvedObject.name=${NAME},reason=RolledBack`,
        '-o',
        'jsonpath={.items[*].message}',
      );
      expect(events).toContain('(cohort: identities acme-cluster)');
      await load.settles(['1']);
    } finally {
      const tally = await load.stop();
      process.stderr.write(
        `cohort canary on the cluster: customer ${customerAnswers.length} calls, the others ${JSON.stringify(tally)}\n`,
      );
      expect(tally.failures).toEqual([]);
      expect(Object.keys(tally.byLabel)).toEqual(['1']);
    }
  });

  it('the API server refuses a traffic split naming no version, with the rule’s message', async () => {
    const refused = await applyDoc(t.c, doc({ traffic: [{ version: '9', percent: 10 }] })).then(
      () => '',
      (err: Error) => err.message,
    );
    expect(refused).toMatch(/each spec.traffic entry must name one of spec.versions/);
    const over = await applyDoc(
      t.c,
      doc({ defaultVersion: '1', traffic: [{ version: '2', percent: 101 }] }),
    ).then(
      () => '',
      (err: Error) => err.message,
    );
    expect(over).toMatch(/percent/);
    const refusedBy = (spec: Record<string, unknown>) =>
      applyDoc(t.c, doc({ defaultVersion: '1', ...spec })).then(
        () => '',
        (err: Error) => err.message,
      );
    expect(await refusedBy({ traffic: [{ version: '2', percent: 5 }], rollout: { version: '2' } })).toMatch(
      /spec.rollout sets the canary's traffic itself/,
    );
    expect(await refusedBy({ rollout: { version: '2', steps: [50, 10] } })).toMatch(
      /spec.rollout.steps must increase/,
    );
    expect(await refusedBy({ shadow: { version: '1' } })).toMatch(
      /spec.shadow.version must not be the default version/,
    );
    await t.kubectl('-n', MODELS_NS, 'delete', 'model', NAME, '--wait=true');
  });
});

describe('autoscaling on the cluster', () => {
  const NAME = 'model-auto';
  const replicasOf = () => deploymentReplicas(t, MODELS_NS, NAME);
  const podsOf = () => podNames(t, MODELS_NS, `tollgate.dev/model=${NAME}`);

  it('scales up under load, down when the load drops, to zero when idle, and back on the next call, losing no call', async () => {
    await iris.upload(BUCKET, 'auto/1', NAME);
    await applyDoc(t.c, scaledModelDoc(NAME, MODELS_NS, `s3://${BUCKET}/auto/1`));
    const { key } = await createKey(t, 'sam', { module: 'platform', roles: ['models:inference'] });
    const auth = { authorization: `Apikey ${key}` };
    const one = irisInfer([iris.expected.rows[0]!]);
    const infer = () => call(`${t.gateway}/v2/models/${NAME}/infer`, { headers: auth, body: one });
    await eventually(
      'first answer',
      async () => ((await infer()).status === 200 ? true : undefined),
      300_000,
    );

    // Four clients calling back to back keep about four calls in flight: one replica each, up to three.
    const heavy = steadyLoad(async () => {
      const r = await infer();
      return { status: r.status, label: '', detail: JSON.stringify(r.body) };
    }, 4);
    let light: ReturnType<typeof steadyLoad> | undefined;
    const loadStarted = Date.now();
    try {
      await eventually(
        'three replicas ready under load',
        async () => ((await replicasOf()).ready === 3 ? true : undefined),
        180_000,
      );
      times['autoscaling: load to 3 ready replicas'] = Date.now() - loadStarted;
      const heavyTally = await heavy.stop();
      // One client with pauses: under one call in flight, so back to one replica, calls going on
      // while the other two go away.
      light = steadyLoad(async () => {
        const r = await infer();
        await new Promise((resolve) => setTimeout(resolve, 200));
        return { status: r.status, label: '', detail: JSON.stringify(r.body) };
      }, 1);
      const dropped = Date.now();
      await eventually(
        'down to one replica',
        async () => ((await replicasOf()).want === 1 && (await podsOf()).length === 1 ? true : undefined),
        180_000,
      );
      times['autoscaling: load drop to one replica left (window 10 s, preStop 5 s)'] = Date.now() - dropped;
      const lightTally = await light.stop();
      light = undefined;
      process.stderr.write(
        `autoscaling on the cluster: heavy ${JSON.stringify(heavyTally)} light ${JSON.stringify(lightTally)}\n`,
      );
      expect([...heavyTally.failures, ...lightTally.failures]).toEqual([]);
      expect(heavyTally.total).toBeGreaterThan(100);
    } finally {
      await heavy.stop();
      await light?.stop();
    }

    // Idle: to zero, no pod left, and the status says why.
    const idle = Date.now();
    await eventually(
      'scaled to zero',
      async () => ((await podsOf()).length === 0 && (await replicasOf()).want === 0 ? true : undefined),
      120_000,
    );
    times['autoscaling: last call to no pod (idle 15 s, preStop 5 s)'] = Date.now() - idle;
    const status = JSON.parse(await t.kubectl('-n', MODELS_NS, 'get', 'model', NAME, '-o', 'json')) as {
      status?: { phase?: string; conditions?: Array<{ type: string; reason: string }> };
    };
    expect(status.status?.phase).toBe('Ready');
    expect(status.status?.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('ScaledToZero');

    // Cold start: calls at zero are held by the gateway and answered once a replica is ready.
    const cold = Date.now();
    const answers = await Promise.all(Array.from({ length: 5 }, () => infer()));
    times['cold start from zero: first call to its answer'] = Date.now() - cold;
    // A refusal shows its body: which step of the wake-up refused it.
    expect(answers.map((a) => (a.status === 200 ? 200 : `${a.status} ${JSON.stringify(a.body)}`))).toEqual([
      200, 200, 200, 200, 200,
    ]);
    expect((await podsOf()).length).toBe(1);
    // Sent to the starting replica as soon as its readiness probe passed, asked by the gateway
    // itself: the gateway says so, with the pod's address.
    // (Answered before the kubelet found the pod Ready: its address, Ready or not.)
    const podIp = (
      await t.kubectl(
        '-n',
        MODELS_NS,
        'get',
        'pods',
        '-l',
        `tollgate.dev/model=${NAME}`,
        '-o',
        'jsonpath={.items[*].status.podIP}',
      )
    ).trim();
    const woke = await wakeUps(t, NAME);
    expect(podIp).toMatch(/^[\d.:a-f]+$/);
    expect(woke.at(-1)).toContain(`"early":"http://${podIp}:`);
    await t.kubectl('-n', MODELS_NS, 'delete', 'model', NAME, '--wait=true');
  });
});

describe('REST through the ingress', () => {
  it('serves the chart’s Ingress with the cluster’s ingress controller, called from the host', async () => {
    const ingress = JSON.parse(
      await t.kubectl('-n', NAMESPACE, 'get', 'ingress', `${RELEASE}-gateway`, '-o', 'json'),
    ) as { spec: { ingressClassName?: string; rules: Array<{ host?: string }> } };
    expect(ingress.spec.ingressClassName).toBe(t.c.ingress.className);
    expect(ingress.spec.rules.map((r) => r.host)).toEqual([INGRESS_HOST]);

    // The controller picks the rule up on its own schedule: wait for the first answer.
    const live = await eventually('the Ingress route', async () => {
      const r = await callHost(`${t.ingress}/v2/health/live`, INGRESS_HOST);
      return r.status === 200 ? r : undefined;
    });
    expect(live.status).toBe(200);
    // Another host matches no rule: the controller's own 404, never the gateway.
    const elsewhere = await callHost(`${t.ingress}/v2/health/live`, 'other.test');
    expect(elsewhere.status).toBe(404);

    // The platform REST resource, with a key and without, through the ingress.
    const { key } = await createKey(t, 'alice', { module: 'platform', roles: ['models:viewer'] });
    const listed = await callHost(`${t.ingress}/events/platform/api/v1/models`, INGRESS_HOST, {
      headers: { authorization: `Apikey ${key}` },
    });
    expect(listed.status).toBe(200);
    expect(Array.isArray(listed.body['items'])).toBe(true);
    const unknown = await callHost(`${t.ingress}/events/platform/api/v1/models/model-nope`, INGRESS_HOST, {
      headers: { authorization: `Apikey ${key}` },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body['code']).toBe('unknown_model');
    const refused = await callHost(`${t.ingress}/events/platform/api/v1/models`, INGRESS_HOST);
    expect(refused.status).toBe(401);
    expect(refused.body['code']).toBe('missing_api_key');
    expect(refused.headers.get('www-authenticate')).toMatch(/^Apikey/);

    // V2 inference through the ingress answers what scikit-learn answers.
    const infer = await createKey(t, 'alice', { module: 'platform', roles: ['models:inference'] });
    const answer = await callHost(`${t.ingress}/v2/models/${MODEL}/infer`, INGRESS_HOST, {
      headers: { authorization: `Apikey ${infer.key}` },
      body: irisInfer(iris.expected.rows),
    });
    expect(answer.status).toBe(200);
    expect((answer.body['outputs'] as Array<{ data: number[] }>)[0]!.data).toEqual(iris.expected.predictions);
  });
});

describe('keys through the gateway pods', () => {
  it('work at once, and a deleted key is refused by both gateway replicas', async () => {
    const { id, key } = await createKey(t, 'bob', { module: 'platform', roles: ['models:inference'] });
    const ips = await readyPodIps(t, NAMESPACE, 'app.kubernetes.io/component=gateway');
    expect(ips).toHaveLength(2);
    const meta = (ip: string) =>
      call(`http://${ip}:8080/v2/models/${MODEL}`, { headers: { authorization: `Apikey ${key}` } });
    for (const ip of ips) expect((await meta(ip)).status).toBe(200);
    // The key is an ApiKey resource holding only its hash.
    const resource = await t.kubectl('get', 'apikeys', '-A', '-o', 'json');
    expect(resource).toContain(id);
    expect(resource).not.toContain(key);

    const del = await call(`${t.gateway}/api/v1/apikeys/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${await t.token('bob')}` },
    });
    expect(del.status).toBe(204);
    for (const ip of ips) {
      const r = await meta(ip);
      expect(r.status).toBe(401);
      expect(r.body['code']).toBe('unknown_api_key');
    }
  });
});

describe('rolling a key on the cluster', () => {
  it('links the ApiKey resources (GitOps sees it) and stops the old key on both gateway pods', async () => {
    const old = await createKey(t, 'bob', { module: 'platform', roles: ['models:inference'], name: 'ci' });
    const ips = await readyPodIps(t, NAMESPACE, 'app.kubernetes.io/component=gateway');
    const meta = (ip: string, key: string) =>
      call(`http://${ip}:8080/v2/models/${MODEL}`, { headers: { authorization: `Apikey ${key}` } });
    for (const ip of ips) expect((await meta(ip, old.key)).status).toBe(200);

    const rolled = await call(`${t.gateway}/api/v1/apikeys/${old.id}/roll`, {
      headers: { authorization: `Bearer ${await t.token('bob')}` },
      body: { gracePeriodSeconds: 0 },
    });
    expect(rolled.status).toBe(201);
    const fresh = { id: String(rolled.body['id']), key: String(rolled.body['key']) };
    const spec = async (id: string) =>
      JSON.parse(
        await t.kubectl('-n', NAMESPACE, 'get', 'apikey', `key-${id}`, '-o', 'jsonpath={.spec}'),
      ) as {
        rolled?: { to: string };
        rolledFrom?: string;
        name?: string;
      };
    expect((await spec(old.id)).rolled?.to).toBe(fresh.id);
    expect(await spec(fresh.id)).toMatchObject({ rolledFrom: old.id, name: 'ci' });
    for (const ip of ips) {
      const r = await meta(ip, old.key);
      expect([r.status, r.body['code']]).toEqual([401, 'rolled_api_key']);
      expect((await meta(ip, fresh.key)).status).toBe(200);
    }
  });
});

describe('a workflow Service', () => {
  beforeAll(async () => {
    await echoWorkflowService(t, MODELS_NS, 'scorer', {
      workflow: 'fraud',
      service: 'scorer',
      owner: 'alice',
    });
  });

  it('is reached with a bda key of its workflow, and not with a key of another workflow', async () => {
    const own = await createKey(t, 'alice', { module: 'bda', roles: ['fraud'] });
    const r = await eventually('workflow route', async () => {
      const res = await call(`${t.gateway}/events/bda/fraud/scorer/score?x=1`, {
        headers: { authorization: `Apikey ${own.key}` },
      });
      return res.status === 200 ? res : undefined;
    });
    expect(r.body['path']).toBe('/score?x=1');
    // The caller's key never reaches the workload.
    expect(r.body['authorization']).toBeNull();

    await workflowRecord(t.c, 'churn', 'carol', [MODELS_NS]);
    await applyDoc(t.c, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'other',
        namespace: MODELS_NS,
        labels: { 'tollgate.dev/workflow': 'churn', 'tollgate.dev/service': 'scorer' },
      },
      spec: { selector: { app: 'scorer' }, ports: [{ name: 'http', port: 80, targetPort: 8000 }] },
    });
    const other = await eventually('churn key', async () => {
      try {
        return await createKey(t, 'carol', { module: 'bda', roles: ['churn'] });
      } catch {
        return undefined;
      }
    });
    const refused = await call(`${t.gateway}/events/bda/fraud/scorer/score`, {
      headers: { authorization: `Apikey ${other.key}` },
    });
    expect(refused.status).toBe(403);
    // Nor through an encoded path that would cross into the other workflow.
    const sneaky = await call(`${t.gateway}/events/bda/churn/scorer/..%2F..%2Ffraud%2Fscorer%2Fscore`, {
      headers: { authorization: `Apikey ${other.key}` },
    });
    expect(sneaky.status).toBe(400);
  });
});

describe('through a Gateway API route', () => {
  interface RouteStatus {
    status?: {
      parents?: Array<{
        parentRef: { name: string };
        controllerName: string;
        conditions: Array<{ type: string; status: string }>;
      }>;
    };
  }
  const gatewayUrl = (): string => `http://${t.c.gatewayApi.address}`;

  it('attaches the HTTPRoute and GRPCRoute to the Gateway named, and serves keys, a workflow and V2 over REST and gRPC there', async () => {
    const { gateway } = t.c.gatewayApi;
    for (const kind of ['httproute', 'grpcroute']) {
      const parent = await eventually(`${kind} accepted by the Gateway`, async () => {
        const route = JSON.parse(
          await t.kubectl('-n', NAMESPACE, 'get', kind, `${RELEASE}-gateway`, '-o', 'json'),
        ) as RouteStatus;
        const found = route.status?.parents?.find((p) => p.parentRef.name === gateway.name);
        const accepted = found?.conditions.find((c) => c.type === 'Accepted');
        return accepted?.status === 'True' ? found : undefined;
      });
      expect(parent.controllerName).toBe('traefik.io/gateway-controller');
      expect(parent.conditions.find((c) => c.type === 'ResolvedRefs')?.status).toBe('True');
    }
    // The route is served on the controller's own schedule: wait for the first answer.
    await eventually('the HTTPRoute served', async () => {
      const r = await call(`${gatewayUrl()}/v2/health/live`).catch(() => undefined);
      return r?.status === 200 ? r : undefined;
    });
    // A key made through the management API, on the route.
    const made = await call(`${gatewayUrl()}/api/v1/apikeys`, {
      headers: { authorization: `Bearer ${await t.token('alice')}` },
      body: { module: 'bda', roles: ['fraud'] },
    });
    expect(made.status).toBe(201);
    const bda = String(made.body['key']);
    const workflow = await eventually('the workflow through the Gateway', async () => {
      const r = await call(`${gatewayUrl()}/events/bda/fraud/scorer/score?via=gateway`, {
        headers: { authorization: `Apikey ${bda}` },
      });
      return r.status === 200 ? r : undefined;
    });
    expect(workflow.body['path']).toBe('/score?via=gateway');
    expect(workflow.body['authorization']).toBeNull();
    const refused = await call(`${gatewayUrl()}/events/bda/fraud/scorer/score`);
    expect([refused.status, refused.body['code']]).toEqual([401, 'missing_api_key']);

    const { key } = await createKey(t, 'alice', { module: 'platform', roles: ['models:inference'] });
    const rest = await call(`${gatewayUrl()}/v2/models/${MODEL}/infer`, {
      headers: { authorization: `Apikey ${key}` },
      body: irisInfer(TRITON_GRPC_ROWS),
    });
    expect(rest.status).toBe(200);
    const expected = (rest.body['outputs'] as Array<{ name: string; data: number[] }>).find(
      (o) => o.name === 'predict',
    )?.data;
    // tritonclient.grpc through the GRPCRoute: h2c from the Gateway to the gateway's grpc port.
    const got = await tritonGrpc(t.c.gatewayApi.address, MODEL, key);
    expect([got.live, got.ready, got.model_ready, got.model_name]).toEqual([true, true, true, MODEL]);
    expect(got.predict).toEqual(expected);
    expect(got.refused).toEqual(tritonGrpcRefusals(false));
  });
});

describe('faults', () => {
  it('a gateway pod deleted under a bounded load loses no request', async () => {
    const { key } = await createKey(t, 'alice', { module: 'platform', roles: ['models:inference'] });
    const [victim] = (
      await t.kubectl(
        '-n',
        NAMESPACE,
        'get',
        'pods',
        '-l',
        'app.kubernetes.io/component=gateway',
        '-o',
        'name',
      )
    )
      .trim()
      .split('\n');
    let ok = 0;
    const failures: string[] = [];
    let stop = false;
    const worker = async () => {
      for (let i = 0; i < 4000 && !stop; i++) {
        try {
          const r = await call(`${t.gateway}/v2/models/${MODEL}/ready`, {
            headers: { authorization: `Apikey ${key}` },
          });
          if (r.status === 200) ok++;
          else failures.push(`HTTP ${r.status} ${JSON.stringify(r.body)}`);
        } catch (e) {
          failures.push(
            e instanceof Error ? `${e.message} ${String((e as { cause?: unknown }).cause)}` : String(e),
          );
        }
      }
    };
    const load = Promise.all([worker(), worker(), worker(), worker()]);
    await new Promise((r) => setTimeout(r, 1500));
    const deleted = Date.now();
    await t.kubectl('-n', NAMESPACE, 'delete', victim!, '--wait=true');
    times['gateway pod deletion (graceful) took'] = Date.now() - deleted;
    await new Promise((r) => setTimeout(r, 3000));
    stop = true;
    await load;
    process.stderr.write(`gateway pod deleted under load: ${ok} answered, ${failures.length} failed\n`);
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(100);
  });

  it('the leader operator pod deleted: the standby takes the Lease and goes on reconciling', async () => {
    const lease = async () =>
      JSON.parse(await t.kubectl('-n', NAMESPACE, 'get', 'lease', `${RELEASE}-operator`, '-o', 'json')) as {
        spec: { holderIdentity?: string };
      };
    const holder = (await lease()).spec.holderIdentity ?? '';
    const leaderPod = holder.replace(/-[0-9a-f]{8}$/, '');
    expect(leaderPod).toMatch(new RegExp(`^${RELEASE}-operator-`));
    const deleted = Date.now();
    await t.kubectl('-n', NAMESPACE, 'delete', 'pod', leaderPod, '--wait=false');
    const next = await eventually('a new Lease holder', async () => {
      const h = (await lease()).spec.holderIdentity;
      return h !== undefined && h !== holder && !h.startsWith(leaderPod) ? h : undefined;
    });
    times['operator leader deleted -> standby holds the Lease'] = Date.now() - deleted;
    expect(next).not.toBe(holder);
    // The new leader reconciles: a Model applied now gets its Deployment.
    await applyDoc(t.c, model('model-after', 'after/v1'));
    await eventually(
      'Deployment of model-after',
      async () =>
        (await t.kubectl('-n', MODELS_NS, 'get', 'deploy', 'model-after', '-o', 'name')).trim() || undefined,
    );
    await t.kubectl('-n', MODELS_NS, 'delete', 'model', 'model-after', '--wait=true');
  });

  it('the Redis pod restarted: keys and routes are rebuilt from the resources', async () => {
    const { key } = await createKey(t, 'alice', { module: 'platform', roles: ['models:inference'] });
    const infer = () =>
      call(`${t.gateway}/v2/models/${MODEL}`, { headers: { authorization: `Apikey ${key}` } });
    expect((await infer()).status).toBe(200);
    const restarted = Date.now();
    await t.kubectl(
      '-n',
      NAMESPACE,
      'delete',
      'pod',
      '-l',
      'app.kubernetes.io/component=redis',
      '--wait=true',
    );
    await eventually(
      'the key and the model route work again',
      async () => ((await infer()).status === 200 ? true : undefined),
      180_000,
      250,
    );
    times['Redis pod restarted -> key and route answer again'] = Date.now() - restarted;
    // Every gateway replica reconnects on its own schedule: the management API (whichever replica
    // answers) writes keys again too before the next test makes one.
    await eventually(
      'the management API writes keys again',
      async () => {
        // Four in a row, through whichever replicas the Service picks.
        for (let n = 0; n < 4; n++) {
          const made = await createKey(t, 'alice', { module: 'platform', roles: ['models:inference'] }).then(
            () => true,
            () => false,
          );
          if (!made) return undefined;
        }
        return true;
      },
      60_000,
      250,
    );
  });

  it('kubectl delete model removes the Deployment, the Service and the route', async () => {
    const { key } = await createKey(t, 'alice', { module: 'platform', roles: ['models:inference'] });
    await t.kubectl('-n', MODELS_NS, 'delete', 'model', MODEL, '--wait=true');
    await eventually('Deployment gone', async () =>
      (
        await t.kubectl(
          '-n',
          MODELS_NS,
          'get',
          'deploy,svc',
          '-l',
          `tollgate.dev/model=${MODEL}`,
          '-o',
          'name',
        )
      ).trim() === ''
        ? true
        : undefined,
    );
    const r = await eventually('route gone', async () => {
      const res = await call(`${t.gateway}/v2/models/${MODEL}`, {
        headers: { authorization: `Apikey ${key}` },
      });
      return res.status === 404 ? res : undefined;
    });
    expect(r.body['code']).toBe('model_not_found');
  });
});
