// A model's sidecar beside a real MLServer, on one machine (the placement a Model with
// spec.gateway: sidecar gets in its pod): the V2 endpoints of its one model, with the keys and the
// request checks of the central gateway's /v2, and the central gateway's signed grants.
import { markIndexBuilt } from '../workflow-route.js';
import { execFile } from 'node:child_process';
import { connect, createServer, type AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { redisKeys } from '../../../common/redis/schema.js';
import { grantAudience } from '../../../common/resources/grant.js';
import { RouteWriter } from '../../../common/routes/workflow-routes.js';
import { createSidecar, type Sidecar } from '../../../gateway/sidecar/sidecar.js';
import { GrantSigner } from '../../../gateway/auth/signed-grant.js';
import { redis, startMlserver, venv } from '../../harness/index.js';
import {
  apikey,
  createKey,
  redisClient,
  send,
  startGateway,
  uniqueName,
  type TestGateway,
  sidecarServices,
} from './support.js';
import { testSealer, TEST_SIGNING_KEY_FILE, TEST_TRUSTED_KEYS } from '../signing.js';
import { InferenceClient, refusal } from '../../harness/grpc-clients.js';

const run = promisify(execFile);
const FIXTURE = new URL('../harness/fixtures/train_iris.py', import.meta.url).pathname;

describe('a model’s sidecar in front of MLServer', () => {
  const model = `model-${uniqueName('side')}`;
  const workflow = uniqueName('wf-model');
  let dir: string;
  let rc: Redis;
  let ml: Awaited<ReturnType<typeof startMlserver>>;
  let sidecar: Sidecar;
  let sidecarUrl: string;
  let central: TestGateway;
  let unsigned: TestGateway;
  let expected: { rows: number[][]; predictions: number[] };

  const infer = (rows: number[][]) => ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      inputs: [{ name: 'input-0', datatype: 'FP64', shape: [rows.length, 4], data: rows.flat() }],
    }),
  });
  const withKey = (key: string, init: ReturnType<typeof infer>) => ({
    ...init,
    headers: { ...init.headers, ...apikey(key) },
  });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-model-sidecar-'));
    await run(venv().python, [FIXTURE, dir, model]);
    expected = JSON.parse(await readFile(path.join(dir, 'expected.json'), 'utf8')) as typeof expected;
    ml = await startMlserver(dir);
    const r = await redis();
    rc = redisClient(r.url);
    central = await startGateway({ redisUrl: r.url });
    // A gateway that verifies entries but holds no signing key: it cannot vouch for a call.
    unsigned = await startGateway({
      redisUrl: r.url,
      grantSigningKeyFile: undefined,
      trustedKeys: TEST_TRUSTED_KEYS,
    });
    const services = await sidecarServices(r.url);
    sidecar = createSidecar(services, {
      kind: 'model',
      namespace: 'default',
      upstream: new URL(ml.url),
      model,
      workflow,
    });
    sidecarUrl = `http://127.0.0.1:${(await sidecar.traffic.listen(0, '127.0.0.1')).port}`;
    // As the operator writes it for a Model behind its sidecar.
    await new RouteWriter(rc, await testSealer()).put(redisKeys.modelRoute(model), {
      url: sidecarUrl,
      workflow,
      source: `model/default/${model}`,
      grantAudience: grantAudience.model('default', model),
    });
    await markIndexBuilt(rc);
  }, 180_000);

  afterAll(async () => {
    await sidecar?.traffic.shutdown();
    await central?.stop();
    await unsigned?.stop();
    await ml?.stop();
    rc?.disconnect();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers its model’s V2 calls with a key /v2 takes, as scikit-learn does', async () => {
    const { key } = await createKey(rc, 'platform', ['models:inference']);
    const r = await send(sidecarUrl, `/v2/models/${model}/infer`, withKey(key, infer(expected.rows)));
    expect(r.status).toBe(200);
    expect((r.json.outputs as Array<{ data: number[] }>)[0]?.data).toEqual(expected.predictions);
    const wf = await createKey(rc, 'bda', [workflow]);
    expect((await send(sidecarUrl, `/v2/models/${model}/ready`, { headers: apikey(wf.key) })).json).toEqual({
      name: model,
      ready: true,
    });
    const meta = await send(sidecarUrl, `/v2/models/${model}`, { headers: apikey(key) });
    expect([meta.status, meta.json.name]).toEqual([200, model]);
  });

  it('refuses every other call with the central gateway’s codes', async () => {
    const none = await send(sidecarUrl, `/v2/models/${model}/infer`, infer(expected.rows));
    expect([none.status, none.json.code]).toEqual([401, 'missing_api_key']);
    const viewer = await createKey(rc, 'platform', ['models:viewer']);
    const denied = await send(
      sidecarUrl,
      `/v2/models/${model}/infer`,
      withKey(viewer.key, infer(expected.rows)),
    );
    expect([denied.status, denied.json.code]).toEqual([403, 'model_access_denied']);
    const other = await createKey(rc, 'bda', [uniqueName('wf-other')]);
    const foreign = await send(
      sidecarUrl,
      `/v2/models/${model}/infer`,
      withKey(other.key, infer(expected.rows)),
    );
    expect([foreign.status, foreign.json.code]).toEqual([403, 'model_access_denied']);
    const { key } = await createKey(rc, 'platform', ['models:inference']);
    const elsewhere = await send(
      sidecarUrl,
      '/v2/models/model-else/infer',
      withKey(key, infer(expected.rows)),
    );
    expect([elsewhere.status, elsewhere.json.code]).toEqual([404, 'model_not_found']);
    const notV2 = await send(sidecarUrl, '/metrics', { headers: apikey(key) });
    expect([notV2.status, notV2.json.code]).toEqual([404, 'unknown_endpoint']);
    const bad = await send(sidecarUrl, `/v2/models/${model}/infer`, {
      ...withKey(key, infer(expected.rows)),
      body: JSON.stringify({
        inputs: [{ name: 'input-0', datatype: 'FP64', shape: [2, 4], data: [1, 2, 3] }],
      }),
    });
    expect([bad.status, bad.json.code]).toEqual([400, 'shape_data_mismatch']);
    const forged = await send(sidecarUrl, `/v2/models/${model}/infer`, {
      ...infer(expected.rows),
      headers: { ...infer(expected.rows).headers, 'x-tollgate-grant': 'forged' },
    });
    expect([forged.status, forged.json.code]).toEqual([401, 'invalid_grant']);
  });

  it('answers V2 over gRPC on its gRPC port with the same key checks, and never takes a grant from the call', async () => {
    const grpc = new InferenceClient(`127.0.0.1:${await sidecar.traffic.listenGrpc(0, '127.0.0.1')}`);
    try {
      const { key } = await createKey(rc, 'platform', ['models:inference']);
      const request = {
        model_name: model,
        inputs: [
          {
            name: 'input-0',
            datatype: 'FP64',
            shape: [expected.rows.length, 4],
            contents: { fp64_contents: expected.rows.flat() },
          },
        ],
      };
      const ok = await grpc.call('ModelInfer', request, apikey(key));
      const outputs = ok.value?.outputs as Array<{ datatype: string; shape: number[] }>;
      const bytes = (ok.value?.raw_output_contents as Buffer[])[0] as Buffer;
      const predicted = Array.from({ length: bytes.length / 8 }, (_, i) =>
        outputs[0]?.datatype === 'INT64' ? Number(bytes.readBigInt64LE(i * 8)) : bytes.readDoubleLE(i * 8),
      );
      expect(predicted).toEqual(expected.predictions);
      expect((await grpc.call('ModelReady', { name: model }, apikey(key))).value).toEqual({ ready: true });
      expect(refusal(await grpc.call('ModelInfer', request, {}))).toEqual([
        16,
        'missing_api_key',
        'missing_api_key',
      ]);
      const viewer = await createKey(rc, 'platform', ['models:viewer']);
      expect(refusal(await grpc.call('ModelInfer', request, apikey(viewer.key)))).toEqual([
        7,
        'model_access_denied',
        'model_access_denied',
      ]);
      const elsewhere = await grpc.call('ModelInfer', { ...request, model_name: 'model-else' }, apikey(key));
      expect(refusal(elsewhere)).toEqual([5, 'model_not_found', 'model_not_found']);
      // A grant is the central gateway's, over HTTP: a gRPC caller's metadata cannot carry one in.
      const signer = await GrantSigner.open(TEST_SIGNING_KEY_FILE);
      const token = await signer.sign(
        { id: 'k-grpc', owner: 'alice', module: 'platform', roles: ['models:inference'] },
        grantAudience.model('default', model),
        { method: 'POST', target: `/v2/models/${model}/infer` },
      );
      expect(refusal(await grpc.call('ModelInfer', request, { 'x-tollgate-grant': token }))).toEqual([
        16,
        'missing_api_key',
        'missing_api_key',
      ]);
    } finally {
      grpc.close();
    }
  });

  it('lets the central gateway’s calls in on their signed grant, metadata fetch included', async () => {
    const { key, hash } = await createKey(rc, 'platform', ['models:inference']);
    // The key's own invalidation message must land first: one that lands during the lookup below
    // keeps its answer out of the cache (it may be stale), and the test needs it cached.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const first = await send(central.url, `/v2/models/${model}/infer`, withKey(key, infer(expected.rows)));
    expect(first.status).toBe(200);
    // The key's index entry vanishes unannounced: the central gateway's cache still has it, a
    // lookup would fail. The sidecar does not look: the grant is enough.
    await rc.del(`tg:key:${hash}`);
    const r = await send(central.url, `/v2/models/${model}/infer`, withKey(key, infer(expected.rows)));
    expect(r.status).toBe(200);
    expect((r.json.outputs as Array<{ data: number[] }>)[0]?.data).toEqual(expected.predictions);
    const direct = await send(sidecarUrl, `/v2/models/${model}/infer`, withKey(key, infer(expected.rows)));
    expect([direct.status, direct.json.code]).toEqual([401, 'unknown_api_key']);
  });

  it('tries a call whose connection dropped after the sidecar spent its grant again, with a grant of its own', async () => {
    // A replica stopping cuts its calls after its sidecar verified (and spent) their grants: a relay
    // in front of the sidecar drops the first inference's connection once its answer starts.
    let dropped = 0;
    const sidecarPort = Number(new URL(sidecarUrl).port);
    const relay = createServer((client) => {
      const upstream = connect(sidecarPort, '127.0.0.1');
      let inference = false;
      client.on('data', (d: Buffer) => {
        if (d.toString('latin1').startsWith('POST ') && d.includes('/infer')) inference = true;
        upstream.write(d);
      });
      upstream.on('data', (d: Buffer) => {
        if (inference && dropped === 0) {
          dropped++;
          client.destroy();
          upstream.destroy();
          return;
        }
        client.write(d);
      });
      for (const [a, b] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        a.on('close', () => b.destroy());
        a.on('error', () => undefined);
      }
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const writer = new RouteWriter(rc, await testSealer());
    const route = (url: string) =>
      writer.put(redisKeys.modelRoute(model), {
        url,
        workflow,
        source: `model/default/${model}`,
        grantAudience: grantAudience.model('default', model),
      });
    try {
      await route(`http://127.0.0.1:${(relay.address() as AddressInfo).port}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const { key } = await createKey(rc, 'platform', ['models:inference']);
      const r = await send(central.url, `/v2/models/${model}/infer`, withKey(key, infer(expected.rows)));
      expect(dropped).toBe(1);
      expect([r.status, (r.json.outputs as Array<{ data: number[] }> | undefined)?.[0]?.data]).toEqual([
        200,
        expected.predictions,
      ]);
    } finally {
      await route(sidecarUrl);
      relay.close();
    }
  });

  it('holds a signed grant to the key’s model scope too', async () => {
    const signer = await GrantSigner.open(TEST_SIGNING_KEY_FILE);
    const target = `/v2/models/${model}/infer`;
    const audience = grantAudience.model('default', model);
    const signedFor = async (models: string[]) => {
      const grant = {
        id: 'k-scope',
        owner: 'alice',
        module: 'platform' as const,
        roles: ['models:inference'],
        models,
      };
      const token = await signer.sign(grant, audience, { method: 'POST', target });
      const body = infer(expected.rows);
      return send(sidecarUrl, target, { ...body, headers: { ...body.headers, 'x-tollgate-grant': token } });
    };
    const outside = await signedFor(['model-elsewhere']);
    expect([outside.status, outside.json.code]).toEqual([403, 'model_not_in_key_scope']);
    expect((await signedFor([model])).status).toBe(200);
  });

  it('a gateway without the signing key says so instead of sending calls the sidecar must refuse', async () => {
    const { key } = await createKey(rc, 'platform', ['models:inference']);
    const r = await send(unsigned.url, `/v2/models/${model}/infer`, withKey(key, infer(expected.rows)));
    expect([r.status, r.json.code]).toEqual([503, 'grant_signer_unavailable']);
  });

  it('takes the bda keys of its pod’s workflow label only while the model’s route names that workflow', async () => {
    const wf = await createKey(rc, 'bda', [workflow]);
    const ready = async () => send(sidecarUrl, `/v2/models/${model}/ready`, { headers: apikey(wf.key) });
    const routes = new RouteWriter(rc, await testSealer());
    const route = {
      url: sidecarUrl,
      source: `model/default/${model}`,
      grantAudience: grantAudience.model('default', model),
    };
    // The operator's route without the workflow: its record does not admit the model's namespace.
    await routes.put(redisKeys.modelRoute(model), route);
    const until = async (status: number) => {
      const deadline = Date.now() + 5_000;
      let r = await ready();
      while (r.status !== status && Date.now() < deadline) {
        await new Promise((done) => setTimeout(done, 50));
        r = await ready();
      }
      return r;
    };
    const refused = await until(403);
    // As the central gateway answers a bda key for a model its workflow does not serve.
    expect([refused.status, refused.json.code]).toEqual([403, 'model_access_denied']);
    expect(String(refused.json.error)).toMatch(/no model '[^']+' of that workflow is served/);
    // The record admits it: so does the sidecar.
    await routes.put(redisKeys.modelRoute(model), { ...route, workflow });
    expect((await until(200)).json).toEqual({ name: model, ready: true });
    // The route of another namespace's Model of the name, naming the workflow: not this pod's.
    await routes.put(redisKeys.modelRoute(model), { ...route, workflow, source: `model/elsewhere/${model}` });
    const elsewhere = await until(403);
    expect([elsewhere.status, elsewhere.json.code]).toEqual([403, 'model_access_denied']);
    await routes.put(redisKeys.modelRoute(model), { ...route, workflow });
    expect((await until(200)).json).toEqual({ name: model, ready: true });
  });
});
