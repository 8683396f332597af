import { gzipSync } from 'node:zlib';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createLogger } from '../../../common/logger.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import { modelSchema, type Model } from '../../../common/resources/model.js';
import { loadGatewayConfig } from '../../../gateway/config.js';
import type { GatewayServer } from '../../../gateway/server.js';
import { manifestModels } from '../../../gateway/v2/model-directory.js';
import { minio, redis, venv } from '../../harness/index.js';
import { apikey, createKey, redisClient, send, type Answer } from '../gateway/support.js';
import {
  modelResource,
  predictInProcess,
  s3Env,
  ServedModels,
  trainExamples,
  uploadFolder,
  ROOT,
} from './stack.js';
import { TEST_SIGNING_KEY_FILE } from '../signing.js';
import { buildCentralGateway } from '../../../gateway/central-gateway.js';
import { modelAccount } from '../../../common/resources/grant.js';
import { readModelUsage } from '../../../gateway/v2/model-usage.js';
import { waitUntil } from '../../harness/wait.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { readKeyUsage } from '../../../common/apikey/usage.js';

const CASES = ['iris', 'diabetes', 'rent', 'reviews', 'digits', 'wine'];
const WORKFLOW = 'wf-inference';
const BODY_LIMIT = 256 * 1024;

interface Output {
  name: string;
  shape: number[];
  datatype: string;
  data: unknown[];
}
type InferAnswer = Answer & { json: { id?: string; model_name?: string; outputs?: Output[] } };

let models: string;
let served: ServedModels;
let rc: ReturnType<typeof redisClient>;
let gateway: GatewayServer;
let base: string;
let work: string;
/** Each served Model's storage URI and local folder, to serve it again. */
const uploaded = new Map<string, { uri: string; folder: string }>();
let keys: {
  platform: string;
  viewer: string;
  bda: string;
  otherBda: string;
  scoped: string;
  paying: string;
  payingBda: string;
};

const json = (body: unknown): { method: string; headers: Record<string, string>; body: string } => ({
  method: 'POST',
  headers: { ...apikey(keys.platform), 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

const infer = (model: string, body: unknown, headers?: Record<string, string>): Promise<InferAnswer> =>
  send(base, `/v2/models/${model}/infer`, {
    ...json(body),
    ...(headers ? { headers } : {}),
  }) as Promise<InferAnswer>;

const sample = async (model: string): Promise<Record<string, unknown>> =>
  JSON.parse(await readFile(path.join(models, 'requests', `${model}.json`), 'utf8')) as Record<
    string,
    unknown
  >;

const outputsByName = (a: InferAnswer): Record<string, Output> =>
  Object.fromEntries((a.json.outputs ?? []).map((o) => [o.name, o]));

function expectClose(actual: unknown[], expected: unknown[], digits = 9): void {
  expect(actual).toHaveLength(expected.length);
  actual.forEach((v, i) => expect(v).toBeCloseTo(expected[i] as number, digits));
}

beforeAll(async () => {
  const [r, m] = await Promise.all([redis(), minio()]);
  models = await trainExamples(CASES);
  work = await mkdtemp(path.join(tmpdir(), 'tollgate-inference-'));
  rc = redisClient(r.url);
  served = new ServedModels(path.join(work, 'runtimes'), s3Env(m), rc);

  // Standalone mode's Model manifests: the gateway's source for "known but not ready".
  const manifests = new ManifestDir(path.join(work, 'manifests'), () => undefined).collection<Model>(
    'models',
    modelSchema,
  );
  const bucket = `inference-${Date.now().toString(36)}`;
  const resources: Array<[Model, string]> = [];
  for (const c of CASES) {
    const name = `model-${c}`;
    const uri = await uploadFolder(m, bucket, `models/${name}`, path.join(models, name));
    const model = modelResource(name, uri, c === 'iris' ? WORKFLOW : undefined);
    uploaded.set(name, { uri, folder: path.join(models, name) });
    await manifests.put(model);
    resources.push([model, path.join(models, name)]);
  }
  // Known to the platform, never deployed.
  await manifests.put(modelResource('model-pending', `s3://${bucket}/models/none`));
  await Promise.all(resources.map(([model, folder]) => served.serve(model, folder)));

  const config = loadGatewayConfig({
    env: {},
    overrides: {
      grantSigningKeyFile: TEST_SIGNING_KEY_FILE,
      host: '127.0.0.1',
      port: 0,
      redisUrl: r.url,
      bodyLimitBytes: BODY_LIMIT,
      // model-iris's inference costs 4 credits of a key that has them (the administrator's price),
      // model-diabetes's 3 a row of its batch.
      creditCosts: { 'model-iris': 4, 'model-diabetes': { credits: 3, per: 'row' } },
    },
  });
  gateway = await buildCentralGateway(config, createLogger('gateway-inference', 'silent'), {
    models: manifestModels(manifests),
  });
  base = `http://127.0.0.1:${(await gateway.listen(0, '127.0.0.1')).port}`;

  keys = {
    platform: (await createKey(rc, 'platform', ['models:inference'])).key,
    viewer: (await createKey(rc, 'platform', ['viewer'])).key,
    bda: (await createKey(rc, 'bda', [WORKFLOW])).key,
    otherBda: (await createKey(rc, 'bda', ['wf-other'])).key,
    scoped: (await createKey(rc, 'platform', ['models:inference'], { models: ['model-iris', 'model-d*'] }))
      .key,
    paying: (await createKey(rc, 'platform', ['models:inference'], { credits: { amount: 10 } })).key,
    payingBda: (await createKey(rc, 'bda', [WORKFLOW], { credits: { amount: 5 } })).key,
  };
}, 600_000);

afterAll(async () => {
  await gateway?.shutdown();
  await served?.stop();
  rc?.disconnect();
  for (const dir of [work, models]) if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('each case of the spec, through the gateway, equals scikit-learn in-process', () => {
  test('np classifier: predict [-1,1] and predict_proba [-1,3], request id echoed', async () => {
    const request = await sample('model-iris');
    const a = await infer('model-iris', request, {
      ...json(request).headers,
      'x-request-id': 'trace-7',
    });
    expect(a.status).toBe(200);
    expect(a.headers['x-request-id']).toBe('trace-7');
    expect(a.json.id).toBe('iris-sample');
    expect(a.json.model_name).toBe('model-iris');
    const out = outputsByName(a);
    const expected = await predictInProcess(
      path.join(models, 'model-iris'),
      path.join(models, 'requests/model-iris.json'),
    );
    expect(out.predict?.shape).toEqual([5, 1]);
    expect(out.predict?.data).toEqual(expected.predict);
    expect(new Set(out.predict?.data)).toEqual(new Set([0, 1, 2]));
    expect(out.predict_proba?.shape).toEqual([5, 3]);
    expectClose(out.predict_proba?.data ?? [], expected.predict_proba ?? []);
  });

  test('np regressor (FP64, nested rows)', async () => {
    const a = await infer('model-diabetes', await sample('model-diabetes'));
    expect(a.status).toBe(200);
    const expected = await predictInProcess(
      path.join(models, 'model-diabetes'),
      path.join(models, 'requests/model-diabetes.json'),
    );
    expect(outputsByName(a).predict?.shape).toEqual([3, 1]);
    expectClose(outputsByName(a).predict?.data ?? [], expected.predict ?? []);
  });

  test('pd: one BYTES column per feature through a ColumnTransformer', async () => {
    const a = await infer('model-rent', await sample('model-rent'));
    expect(a.status).toBe(200);
    const expected = await predictInProcess(
      path.join(models, 'model-rent'),
      path.join(models, 'requests/model-rent.json'),
    );
    expectClose(outputsByName(a).predict?.data ?? [], expected.predict ?? []);
  });

  test('str: raw text through TfidfVectorizer + LogisticRegression', async () => {
    const a = await infer('model-reviews', await sample('model-reviews'));
    expect(a.status).toBe(200);
    const expected = await predictInProcess(
      path.join(models, 'model-reviews'),
      path.join(models, 'requests/model-reviews.json'),
    );
    expect(outputsByName(a).predict?.data).toEqual(expected.predict);
    expect(expected.predict).toEqual(['positive', 'negative', 'negative']);
  });

  test('base64: PNG images decoded by the pipeline', async () => {
    const a = await infer('model-digits', await sample('model-digits'));
    expect(a.status).toBe(200);
    const expected = await predictInProcess(
      path.join(models, 'model-digits'),
      path.join(models, 'requests/model-digits.json'),
    );
    expect(outputsByName(a).predict?.data).toEqual(expected.predict);
    expect(expected.predict).toEqual([0, 1, 2, 3]);
  });

  test('MLflow model with a signature, served with no settings file', async () => {
    const meta = await send(base, '/v2/models/model-wine', { headers: apikey(keys.platform) });
    expect(meta.status).toBe(200);
    const inputs = meta.json.inputs as Array<{ name: string; datatype: string; shape: number[] }>;
    expect(inputs).toHaveLength(13);
    expect(inputs[0]).toMatchObject({ name: 'alcohol', datatype: 'FP64', shape: [-1, 1] });
    const a = await infer('model-wine', await sample('model-wine'));
    expect(a.status).toBe(200);
    const expected = await predictInProcess(
      path.join(models, 'model-wine'),
      path.join(models, 'requests/model-wine.json'),
    );
    expect(a.json.outputs?.[0]?.data).toEqual(expected.predict);
  });

  test('a declared output the model does not produce: in the metadata, absent from the response', async () => {
    const meta = await send(base, '/v2/models/model-diabetes', { headers: apikey(keys.platform) });
    expect(meta.status).toBe(200);
    expect((meta.json.outputs as Output[]).map((o) => o.name)).toEqual(['predict', 'interval']);
    const a = await infer('model-diabetes', await sample('model-diabetes'));
    expect(a.json.outputs?.map((o) => o.name)).toEqual(['predict']);
  });
});

describe('the official V2 client against the gateway', () => {
  test('tritonclient[http] with its defaults: metadata, readiness and inference in binary and JSON tensors', async () => {
    const { stdout } = await promisify(execFile)(
      venv().python,
      [
        path.join(ROOT, 'test/integration/inference/triton_client.py'),
        new URL(base).host,
        'model-iris',
        keys.platform,
      ],
      { cwd: ROOT },
    );
    const got = JSON.parse(stdout) as {
      ready: boolean;
      live: boolean;
      server: { name: string };
      id: string;
      metadata: { inputs: unknown[] };
      binary_outputs: string[];
      predict: number[];
      predict_proba: number[];
      every_predict: number[];
      json_predict: number[];
      json_predict_proba: number[];
    };
    expect(got.ready).toBe(true);
    expect(got.live).toBe(true);
    expect(got.server.name).toBe('tollgate');
    expect(got.id).toBe('triton-1');
    expect(got.metadata.inputs).toEqual([{ name: 'features', datatype: 'FP32', shape: [-1, 4] }]);
    // Its defaults (binary tensors) work, and give what the JSON tensors give.
    expect(got.binary_outputs).toEqual(['predict', 'predict_proba']);
    expect(got.predict).toEqual([0, 2]);
    expect(got.predict_proba).toHaveLength(6);
    expect(got.every_predict).toEqual([0, 2]);
    expect(got.json_predict).toEqual(got.predict);
    expect(got.json_predict_proba).toEqual(got.predict_proba);
  });
});

describe('the checklist, answered by the gateway before the runtime', () => {
  const features = (shape: unknown, data: unknown, datatype = 'FP32') => ({
    inputs: [{ name: 'features', datatype, shape, data }],
  });

  test.each([
    [
      'shape product vs values',
      features([2, 4], [1, 2, 3, 4, 5, 6]),
      'shape_data_mismatch',
      "input 'features': shape [2,4] needs 8 values, data has 6",
    ],
    [
      'batch first',
      features([4], [1, 2, 3, 4]),
      'shape_mismatch',
      "input 'features': shape [4] does not match the declared shape [-1,4]; send [N, 4] with the batch size first",
    ],
    [
      'declared datatype',
      features([1, 4], [1, 2, 3, 4], 'FP64'),
      'datatype_mismatch',
      "input 'features': datatype FP64 does not match the declared FP32",
    ],
    [
      'input name',
      { inputs: [{ name: 'petals', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] },
      'unknown_input',
      "input 'petals' is not an input of model 'model-iris'; its inputs are 'features' (FP32 [-1,4])",
    ],
    [
      'inputs present',
      { id: 'x' },
      'missing_inputs',
      `the request needs a non-empty "inputs" array; model 'model-iris' takes 'features' (FP32 [-1,4])`,
    ],
    [
      'valid datatype',
      features([1, 4], [1, 2, 3, 4], 'FLOAT32'),
      'invalid_datatype',
      'input \'features\': datatype "FLOAT32" is not a V2 datatype; use one of BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, FP32, FP64, BYTES',
    ],
  ])('%s', async (_rule, body, code, message) => {
    const a = await infer('model-iris', body);
    expect([a.status, a.json.code, a.json.error]).toEqual([400, code, message]);
  });

  test('body not JSON', async () => {
    const a = await send(base, '/v2/models/model-iris/infer', { ...json({}), body: '{"inputs": [' });
    expect([a.status, a.json.code]).toEqual([400, 'invalid_json']);
  });

  test('BYTES without content_type, and base64 that does not decode', async () => {
    const missing = await infer('model-reviews', {
      inputs: [{ name: 'text', datatype: 'BYTES', shape: [1], data: ['fine'] }],
    });
    expect([missing.status, missing.json.code, missing.json.error]).toEqual([
      400,
      'missing_content_type',
      `input 'text': BYTES data needs parameters.content_type: "str" for text, "base64" for binary such as images`,
    ]);
    const broken = await infer('model-digits', {
      inputs: [
        {
          name: 'image',
          datatype: 'BYTES',
          shape: [1],
          data: ['iVBORw0KGgo'],
          parameters: { content_type: 'base64' },
        },
      ],
    });
    expect([broken.status, broken.json.code]).toEqual([400, 'invalid_base64']);
    expect(broken.json.error).toMatch(/^input 'image': value 0 is not valid base64/);
  });

  test('pd columns must all be sent, with one batch size', async () => {
    const col = (name: string, data: string[]) => ({
      name,
      datatype: 'BYTES',
      shape: [data.length],
      data,
      parameters: { content_type: 'str' },
    });
    const missing = await infer('model-rent', { inputs: [col('city', ['Paris']), col('rooms', ['2'])] });
    expect([missing.status, missing.json.code, missing.json.error]).toEqual([
      400,
      'missing_input',
      "model 'model-rent' needs input 'area' (BYTES [-1]); the request does not send it",
    ]);
    const uneven = await infer('model-rent', {
      inputs: [col('city', ['Paris', 'Lyon']), col('rooms', ['2']), col('area', ['40'])],
    });
    expect([uneven.status, uneven.json.code]).toEqual([400, 'batch_mismatch']);
  });

  test('binary tensors (the extension tritonclient uses by default) are translated for the JSON runtime', async () => {
    const rows = [5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3];
    const header = Buffer.from(
      JSON.stringify({
        id: 'bin-1',
        inputs: [{ name: 'features', datatype: 'FP32', shape: [2, 4], parameters: { binary_data_size: 32 } }],
        outputs: [{ name: 'predict', parameters: { binary_data: true } }, { name: 'predict_proba' }],
      }),
    );
    const post = (body: Buffer, headerLength: number) =>
      fetch(`${base}/v2/models/model-iris/infer`, {
        method: 'POST',
        headers: { ...apikey(keys.platform), 'inference-header-content-length': String(headerLength) },
        body,
      });
    const res = await post(
      Buffer.concat([header, Buffer.from(new Float32Array(rows).buffer)]),
      header.length,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    const answer = Buffer.from(await res.arrayBuffer());
    const length = Number(res.headers.get('inference-header-content-length'));
    const head = JSON.parse(answer.subarray(0, length).toString()) as {
      id: string;
      outputs: Array<{
        name: string;
        datatype: string;
        data?: number[];
        parameters?: { binary_data_size?: number };
      }>;
    };
    expect(head.id).toBe('bin-1');
    const predict = head.outputs.find((o) => o.name === 'predict');
    expect(predict).toMatchObject({ datatype: 'INT64', parameters: { binary_data_size: 16 } });
    expect(predict?.data).toBeUndefined();
    const raw = answer.subarray(length);
    expect([raw.readBigInt64LE(0), raw.readBigInt64LE(8)]).toEqual([0n, 2n]);
    // The output not asked for in binary stays JSON, as the same request in JSON gets it.
    const asJson = await infer('model-iris', {
      ...features([2, 4], rows),
      outputs: [{ name: 'predict' }, { name: 'predict_proba' }],
    });
    const proba = (asJson.json.outputs as Array<{ name: string; data: number[] }>).find(
      (o) => o.name === 'predict_proba',
    );
    expect(head.outputs.find((o) => o.name === 'predict_proba')?.data).toEqual(proba?.data);

    // Binary data that does not add up is the gateway's 400, naming what to fix.
    const short = await post(Buffer.concat([header, Buffer.alloc(28)]), header.length);
    expect(short.status).toBe(400);
    expect(await short.json()).toMatchObject({
      code: 'invalid_binary_data',
      field: 'inputs[features].parameters.binary_data_size',
    });
    const past = await post(header, header.length + 10);
    expect([past.status, ((await past.json()) as { code: string }).code]).toEqual([
      400,
      'invalid_binary_data',
    ]);
  });

  test('binary outputs asked for in a JSON request come back as raw bytes', async () => {
    const res = await fetch(`${base}/v2/models/model-iris/infer`, {
      ...json({ ...features([1, 4], [1, 2, 3, 4]), parameters: { binary_data_output: true } }),
    });
    expect(res.status).toBe(200);
    const length = Number(res.headers.get('inference-header-content-length'));
    const answer = Buffer.from(await res.arrayBuffer());
    const head = JSON.parse(answer.subarray(0, length).toString()) as {
      outputs: Array<{ name: string; data?: unknown; parameters: { binary_data_size: number } }>;
    };
    expect(head.outputs.every((o) => o.data === undefined && o.parameters.binary_data_size > 0)).toBe(true);
    expect(answer.length).toBe(length + head.outputs.reduce((n, o) => n + o.parameters.binary_data_size, 0));
    // A batch whose answer MLServer would compress (past 500 bytes, for a client that accepts
    // gzip, as fetch does): the gateway asks it uncompressed, and every row comes back whole.
    const rows = Array.from({ length: 60 }, (_, i) => [5.1 + (i % 3), 3.5, 1.4 + (i % 5), 0.2 + (i % 2)]);
    const batch = await fetch(`${base}/v2/models/model-iris/infer`, {
      ...json({
        ...features([60, 4], rows.flat()),
        outputs: [{ name: 'predict' }, { name: 'predict_proba' }],
        parameters: { binary_data_output: true },
      }),
    });
    expect([batch.status, batch.headers.get('content-encoding')]).toEqual([200, null]);
    const batchLength = Number(batch.headers.get('inference-header-content-length'));
    const batchAnswer = Buffer.from(await batch.arrayBuffer());
    const batchHead = JSON.parse(batchAnswer.subarray(0, batchLength).toString()) as typeof head;
    expect(batchHead.outputs.map((o) => o.parameters.binary_data_size)).toEqual([60 * 8, 60 * 3 * 8]);
    expect(batchAnswer.length).toBe(batchLength + 60 * 8 + 60 * 3 * 8);
    const asJson = await infer('model-iris', features([60, 4], rows.flat()));
    const predicted = (asJson.json.outputs as Array<{ data: number[] }>)[0]?.data;
    const raw = batchAnswer.subarray(batchLength, batchLength + 60 * 8);
    expect(Array.from({ length: 60 }, (_, i) => Number(raw.readBigInt64LE(i * 8)))).toEqual(predicted);
    // Asking for a JSON output by name still answers JSON.
    const named = await infer('model-iris', {
      ...features([1, 4], [1, 2, 3, 4]),
      outputs: [{ name: 'predict', parameters: { binary_data: false } }],
    });
    expect(named.status).toBe(200);
  });

  test('a content_type the runtime cannot decode on a numeric input is refused, naming the input', async () => {
    const withType = (contentType: string) => ({
      inputs: [
        { ...features([1, 4], [5.1, 3.5, 1.4, 0.2]).inputs[0], parameters: { content_type: contentType } },
      ],
    });
    const refused = await infer('model-iris', withType('xml'), apikey(keys.platform));
    expect([refused.status, refused.json.code, refused.json.field]).toEqual([
      400,
      'invalid_content_type',
      'inputs[features].parameters.content_type',
    ]);
    expect(refused.json.error).toBe(
      `input 'features': content_type "xml" cannot decode FP32 data; use "np" or leave it out`,
    );
    // The NumPy codec's own name is what MLServer decodes numbers with: accepted.
    expect((await infer('model-iris', withType('np'), apikey(keys.platform))).status).toBe(200);
  });

  test('a body declared as a form or text is 415 with what to send; no Content-Type is accepted', async () => {
    for (const type of [
      'application/x-www-form-urlencoded',
      'text/plain',
      'multipart/form-data; boundary=x',
    ]) {
      const r = await infer('model-iris', features([1, 4], [1, 2, 3, 4]), {
        ...apikey(keys.platform),
        'content-type': type,
      });
      expect([r.status, r.json.code]).toEqual([415, 'unsupported_media_type']);
      expect(r.json.error).toMatch(/Content-Type: application\/json/);
    }
    // tritonclient sends its JSON without a Content-Type.
    const bare = await infer('model-iris', features([1, 4], [1, 2, 3, 4]), apikey(keys.platform));
    expect(bare.status).toBe(200);
    const charset = await infer('model-iris', features([1, 4], [1, 2, 3, 4]), {
      ...apikey(keys.platform),
      'content-type': 'application/json; charset=utf-8',
    });
    expect(charset.status).toBe(200);
  });

  test('a compressed body is 415 naming Content-Encoding, not "invalid JSON"', async () => {
    const body = gzipSync(JSON.stringify(features([1, 4], [1, 2, 3, 4])));
    const a = await send(base, '/v2/models/model-iris/infer', {
      method: 'POST',
      headers: { ...apikey(keys.platform), 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body,
    });
    expect([a.status, a.json.code, a.json.field]).toEqual([
      415,
      'unsupported_media_type',
      'content-encoding',
    ]);
    expect(a.json.error).toBe(
      'the body is sent with Content-Encoding: "gzip"; send it uncompressed, as the gateway checks it before it goes on',
    );
  });

  test('the body limit applies to V2', async () => {
    const big = features(
      [1, 4],
      Array.from({ length: BODY_LIMIT / 2 }, () => 1.5),
    );
    const a = await infer('model-iris', big);
    expect([a.status, a.json.code]).toEqual([413, 'body_too_large']);
  });
});

describe("the runtime's own errors, in the V2 shape", () => {
  test('an output the sklearn runtime does not have (its 400)', async () => {
    const a = await infer('model-iris', {
      inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }],
      outputs: [{ name: 'scores' }],
    });
    expect([a.status, a.json.code, a.json.error]).toEqual([
      400,
      'inference_error',
      "model 'model-iris': SKLearnModel only supports 'predict', 'predict_proba' and 'transform' as outputs (scores was received)",
    ]);
  });

  test("what only MLServer's schema checks (its 422 detail) becomes a 400 naming the field", async () => {
    const a = await infer('model-iris', {
      inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }],
      parameters: 'fast',
    });
    expect([a.status, a.json.code, a.json.field]).toEqual([400, 'invalid_inference_request', 'parameters']);
    expect(a.json.error).toMatch(/^the runtime refused the request: parameters: /);
    // Requested outputs are the gateway's to check: a list of {name} objects.
    const outputs = await infer('model-iris', {
      inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }],
      outputs: 'predict',
    });
    expect([outputs.status, outputs.json.code, outputs.json.field]).toEqual([
      400,
      'invalid_request',
      'outputs',
    ]);
  });

  test('predict_proba on a regressor', async () => {
    const a = await infer('model-diabetes', {
      ...(await sample('model-diabetes')),
      outputs: [{ name: 'predict_proba' }],
    });
    expect([a.status, a.json.code]).toEqual([400, 'inference_error']);
    expect(a.json.error).toMatch(/models do not support 'predict_proba/);
  });

  test('valid base64 that is not an image: the model raises, the client gets a 400 without a traceback', async () => {
    const a = await infer('model-digits', {
      inputs: [
        {
          name: 'image',
          datatype: 'BYTES',
          shape: [1],
          data: ['aGVsbG8gd29ybGQ='],
          parameters: { content_type: 'base64' },
        },
      ],
    });
    expect([a.status, a.json.code]).toEqual([400, 'model_rejected_input']);
    expect(a.json.error).toMatch(
      /^model 'model-digits' could not use the request: (PIL\.)?UnidentifiedImageError: cannot identify image file/,
    );
    expect(a.text).not.toContain('Traceback');
  });
});

describe('who may call a model', () => {
  const ok = features();
  function features() {
    return { inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 4], data: [5.1, 3.5, 1.4, 0.2] }] };
  }

  test('health is open; model endpoints need a key', async () => {
    expect((await send(base, '/v2/health/live')).status).toBe(200);
    expect((await send(base, '/v2/health/ready')).json).toEqual({ ready: true });
    expect((await send(base, '/v2')).json).toEqual({ name: 'tollgate', version: '0.1.0', extensions: [] });
    const wrongMethod = await send(base, '/v2/models/model-iris/infer', { headers: apikey(keys.platform) });
    expect([wrongMethod.status, wrongMethod.json.code, wrongMethod.headers.allow]).toEqual([
      405,
      'method_not_allowed',
      'POST',
    ]);
    const a = await send(base, '/v2/models/model-iris/infer', { method: 'POST', body: JSON.stringify(ok) });
    expect([a.status, a.json.code, a.headers['www-authenticate']]).toEqual([
      401,
      'missing_api_key',
      'Apikey',
    ]);
    expect((await send(base, '/v2/models/model-iris')).status).toBe(401);
  });

  test('a platform key without an inference role is refused', async () => {
    const a = await infer('model-iris', ok, apikey(keys.viewer));
    expect([a.status, a.json.code]).toEqual([403, 'model_access_denied']);
  });

  test("a bda key for the model's workflow may call it; another workflow's may not", async () => {
    expect((await infer('model-iris', ok, apikey(keys.bda))).status).toBe(200);
    const other = await infer('model-iris', ok, apikey(keys.otherBda));
    expect([other.status, other.json.code]).toEqual([403, 'model_access_denied']);
    const noWorkflow = await infer('model-diabetes', ok, apikey(keys.bda));
    expect([noWorkflow.status, noWorkflow.json.code]).toEqual([403, 'model_access_denied']);
    // A model that does not exist is refused to a bda key in the same words as one outside its
    // workflow: the key learns nothing of the models it may not call.
    const absent = await infer('model-nothing', ok, apikey(keys.bda));
    expect([absent.status, absent.json.code]).toEqual([403, 'model_access_denied']);
    expect(absent.json.error).toBe(String(noWorkflow.json.error).replace('model-diabetes', 'model-nothing'));
  });

  test('unknown model 404; known model without a ready replica 503', async () => {
    const unknown = await infer('model-nothing', ok);
    expect([unknown.status, unknown.json.code]).toEqual([404, 'model_not_found']);
    const pending = await infer('model-pending', ok);
    expect([pending.status, pending.json.code, pending.headers['retry-after']]).toEqual([
      503,
      'model_not_ready',
      '1',
    ]);
  });

  test('readiness of a served model', async () => {
    const a = await send(base, '/v2/models/model-iris/ready', { headers: apikey(keys.platform) });
    expect([a.status, a.json]).toEqual([200, { name: 'model-iris', ready: true }]);
  });

  test('the same model as a workflow service, checked the same way', async () => {
    const p = `/events/bda/${WORKFLOW}/model-iris/v2/models/model-iris/infer`;
    const headers = { ...apikey(keys.bda), 'content-type': 'application/json' };
    const a = (await send(base, p, {
      method: 'POST',
      headers: { ...headers, 'x-request-id': 'trace-42' },
      body: JSON.stringify(ok),
    })) as InferAnswer;
    expect(a.status).toBe(200);
    expect(a.headers['x-request-id']).toBe('trace-42');
    expect(outputsByName(a).predict?.data).toEqual([0]);
    const bad = await send(base, p, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        inputs: [{ name: 'features', datatype: 'FP32', shape: [2, 4], data: [1, 2, 3] }],
      }),
    });
    expect([bad.status, bad.json.code, bad.json.error]).toEqual([
      400,
      'shape_data_mismatch',
      "input 'features': shape [2,4] needs 8 values, data has 3",
    ]);
  });

  test('as a workflow service, a model answers only its own V2 endpoints: not its runtime’s other models, nor its repository API', async () => {
    const under = `/events/bda/${WORKFLOW}/model-iris`;
    const headers = { ...apikey(keys.bda), 'content-type': 'application/json' };
    // The runtime holds model-diabetes too (one MLServer here), which this workflow does not own.
    const other = await send(base, `${under}/v2/models/model-diabetes/infer`, {
      method: 'POST',
      headers,
      body: JSON.stringify(await sample('model-diabetes')),
    });
    expect([other.status, other.json.code]).toEqual([404, 'unknown_endpoint']);
    expect(other.json.error).toContain('"model-iris" is a model: call its V2 endpoints');
    const otherMeta = await send(base, `${under}/v2/models/model-diabetes`, { headers });
    expect([otherMeta.status, otherMeta.json.code]).toEqual([404, 'unknown_endpoint']);
    for (const p of ['/v2/repository/models/model-iris/unload', '/v2/repository/index', '/v2', '/metrics']) {
      const r = await send(base, `${under}${p}`, { method: 'POST', headers, body: '{}' });
      expect([p, r.status, r.json.code]).toEqual([p, 404, 'unknown_endpoint']);
    }
    const wrongMethod = await send(base, `${under}/v2/models/model-iris/infer`, { headers });
    expect([wrongMethod.status, wrongMethod.json.code, wrongMethod.headers.allow]).toEqual([
      405,
      'method_not_allowed',
      'POST',
    ]);
    // Still loaded, and its own endpoints answer.
    const meta = await send(base, `${under}/v2/models/model-iris`, { headers });
    expect([meta.status, meta.json.name]).toEqual([200, 'model-iris']);
    const ready = await send(base, `${under}/v2/models/model-iris/ready`, { headers });
    expect(ready.status).toBe(200);
    // Its runtime's health, as a V2 client asks its base URL (tritonclient's is_server_live()).
    for (const which of ['live', 'ready']) {
      const health = await send(base, `${under}/v2/health/${which}`, { headers });
      expect([which, health.status]).toEqual([which, 200]);
      const posted = await send(base, `${under}/v2/health/${which}`, { method: 'POST', headers, body: '{}' });
      expect([posted.status, posted.json.code, posted.headers.allow]).toEqual([
        405,
        'method_not_allowed',
        'GET',
      ]);
    }
    const a = await send(base, `${under}/v2/models/model-iris/infer`, {
      method: 'POST',
      headers,
      body: JSON.stringify(ok),
    });
    expect(a.status).toBe(200);
  });
});

describe('listing the models a key may call', () => {
  const all = [...CASES.map((c) => `model-${c}`), 'model-pending'].sort();

  test('GET /v2/models: every model for an inference key, with readiness; a bda key sees its workflow’s', async () => {
    const a = await send(base, '/v2/models', { headers: apikey(keys.platform) });
    expect(a.status).toBe(200);
    const listed = (
      a.json as unknown as { models: Array<{ name: string; ready: boolean; workflow?: string }> }
    ).models;
    expect(listed.map((m) => m.name)).toEqual(all);
    expect(listed.find((m) => m.name === 'model-iris')).toEqual({
      name: 'model-iris',
      ready: true,
      versions: [],
      workflow: WORKFLOW,
    });
    expect(listed.find((m) => m.name === 'model-pending')?.ready).toBe(false);

    const bda = await send(base, '/v2/models', { headers: apikey(keys.bda) });
    expect((bda.json as unknown as { models: Array<{ name: string }> }).models.map((m) => m.name)).toEqual([
      'model-iris',
    ]);
    const other = await send(base, '/v2/models', { headers: apikey(keys.otherBda) });
    expect(other.json).toEqual({ models: [] });
  });

  test('POST /v2/repository/index answers as MLServer and Triton do, {"ready": true} filters', async () => {
    const index = async (body?: string) =>
      send(base, '/v2/repository/index', {
        method: 'POST',
        headers: {
          ...apikey(keys.platform),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body }),
      });
    const a = await index();
    expect(a.status).toBe(200);
    const entries = a.json as unknown as Array<{
      name: string;
      version: string;
      state: string;
      reason: string;
    }>;
    expect(entries.map((e) => e.name)).toEqual(all);
    expect(entries.find((e) => e.name === 'model-iris')).toEqual({
      name: 'model-iris',
      version: '',
      state: 'READY',
      reason: '',
    });
    expect(entries.find((e) => e.name === 'model-pending')).toMatchObject({ state: 'UNAVAILABLE' });
    const ready = (await index('{"ready": true}')).json as unknown as Array<{ name: string }>;
    expect(ready.map((e) => e.name)).toEqual(all.filter((n) => n !== 'model-pending'));

    const notJson = await index('{ready');
    expect([notJson.status, notJson.json.code]).toEqual([400, 'invalid_json']);
    const wrong = await index('{"ready": "yes"}');
    expect([wrong.status, wrong.json.code, wrong.json.field]).toEqual([400, 'invalid_request', 'ready']);
    const get = await send(base, '/v2/repository/index', { headers: apikey(keys.platform) });
    expect([get.status, get.headers['allow']]).toEqual([405, 'POST']);
  });

  test('no key is 401; a key without an inference role is 403, as for a call', async () => {
    const none = await send(base, '/v2/models');
    expect([none.status, none.json.code]).toEqual([401, 'missing_api_key']);
    const viewer = await send(base, '/v2/models', { headers: apikey(keys.viewer) });
    expect([viewer.status, viewer.json.code]).toEqual([403, 'model_access_denied']);
  });
});

describe('a key limited to some models', () => {
  const features = {
    inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 4], data: [5.1, 3.5, 1.4, 0.2] }],
  };

  test('calls the models it names or matches, and is refused every other with 403 and what it may call', async () => {
    expect((await infer('model-iris', features, apikey(keys.scoped))).status).toBe(200);
    const matched = await send(base, '/v2/models/model-diabetes', { headers: apikey(keys.scoped) });
    expect([matched.status, matched.json['name']]).toEqual([200, 'model-diabetes']);
    for (const path of [
      '/v2/models/model-wine/infer',
      '/v2/models/model-wine',
      '/v2/models/model-wine/ready',
    ]) {
      const post = path.endsWith('/infer');
      const refused = await send(base, path, {
        headers: { ...apikey(keys.scoped), 'content-type': 'application/json' },
        ...(post ? { method: 'POST', body: JSON.stringify(features) } : {}),
      });
      expect([path, refused.status, refused.json.code]).toEqual([path, 403, 'model_not_in_key_scope']);
      expect(refused.json.error).toBe(
        "this key may call only model-iris, model-d*; model 'model-wine' is not among them (GET /v2/models lists what it may call)",
      );
    }
    // A model that does not exist is refused the same way: the scope says nothing of what exists.
    const absent = await infer('model-nothing', features, apikey(keys.scoped));
    expect([absent.status, absent.json.code]).toEqual([403, 'model_not_in_key_scope']);
  });

  test('sees only those models in GET /v2/models and the repository index', async () => {
    const listed = await send(base, '/v2/models', { headers: apikey(keys.scoped) });
    expect((listed.json as unknown as { models: Array<{ name: string }> }).models.map((m) => m.name)).toEqual(
      ['model-diabetes', 'model-digits', 'model-iris'],
    );
    const index = await send(base, '/v2/repository/index', { method: 'POST', headers: apikey(keys.scoped) });
    expect((index.json as unknown as Array<{ name: string }>).map((e) => e.name)).toEqual([
      'model-diabetes',
      'model-digits',
      'model-iris',
    ]);
  });
});

describe('a model whose inference the administrator prices', () => {
  const features = {
    inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 4], data: [5.1, 3.5, 1.4, 0.2] }],
  };

  test('spends its price per inference and 1 per other call, on /v2 and through its workflow', async () => {
    const statuses: Array<number | string> = [];
    const note = (a: { status: number; json: Record<string, unknown> }) =>
      statuses.push(a.status === 200 ? 200 : `${a.status} ${String(a.json['code'])}`);
    note(await infer('model-iris', features, apikey(keys.paying))); // 4
    note(await send(base, '/v2/models/model-iris', { headers: apikey(keys.paying) })); // 5
    note(await infer('model-iris', features, apikey(keys.paying))); // 9
    const refused = await infer('model-iris', features, apikey(keys.paying)); // 13 > 10: refused, given back
    note(refused);
    note(await send(base, '/v2/models/model-iris', { headers: apikey(keys.paying) })); // 10
    note(await send(base, '/v2/models/model-iris', { headers: apikey(keys.paying) })); // 11 > 10
    expect(statuses).toEqual([200, 200, 200, '429 credits_exhausted', 200, '429 credits_exhausted']);
    expect(refused.json.error).toMatch(/^this key's 10 credits are spent \(this call costs 4; 1 left\)/);
    // Published as its workflow's service, the same model costs the same.
    const viaWorkflow = (key: string) =>
      send(base, `/events/bda/${WORKFLOW}/model-iris/v2/models/model-iris/infer`, {
        method: 'POST',
        headers: { ...apikey(key), 'content-type': 'application/json' },
        body: JSON.stringify(features),
      });
    expect((await viaWorkflow(keys.payingBda)).status).toBe(200);
    const second = await viaWorkflow(keys.payingBda);
    expect([second.status, second.json.code]).toEqual([429, 'credits_exhausted']);
  });
});

describe('a model the administrator prices per row of its batch', () => {
  /** The value of one exact series in the gateway's /metrics, 0 when absent. */
  async function metric(name: string): Promise<number> {
    const text = await (await fetch(`${base}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? 0 : Number(line.slice(name.length + 1));
  }

  test('spends its price per row, refuses a batch that costs more than is left before the runtime, and counts the rows', async () => {
    const request = await sample('model-diabetes');
    const input = (request.inputs as Output[])[0] as Output;
    const width = input.shape[1] as number;
    // The sample's first row, its values flat (a sample may nest them by row).
    const row = (input.data as unknown[]).flat(Infinity).slice(0, width);
    const batch = (n: number) => ({
      inputs: [{ ...input, shape: [n, width], data: Array.from({ length: n }, () => row).flat() }],
    });
    const { key, grant } = await createKey(rc, 'platform', ['models:inference'], { credits: { amount: 20 } });
    const runtime = 'tollgate_model_runtime_duration_seconds_count{model="model-diabetes",version=""}';
    const rejected =
      'tollgate_model_rejected_total{model="model-diabetes",version="",code="credits_exhausted"}';
    const [runtimeBefore, rejectedBefore] = [await metric(runtime), await metric(rejected)];
    const statuses: Array<number | string> = [];
    const note = (a: InferAnswer) =>
      statuses.push(a.status === 200 ? 200 : `${a.status} ${String(a.json['code' as keyof typeof a.json])}`);
    note(await infer('model-diabetes', batch(3), apikey(key))); // 9
    note(await infer('model-diabetes', batch(2), apikey(key))); // 15
    const refused = await infer('model-diabetes', batch(2), apikey(key)); // 21 > 20: refused, given back
    note(refused);
    note(await infer('model-diabetes', batch(1), apikey(key))); // 18
    // Its metadata costs what any call does, not a row's price.
    const metadata = await send(base, '/v2/models/model-diabetes', { headers: apikey(key) }); // 19
    note(metadata as InferAnswer);
    note(await infer('model-diabetes', batch(1), apikey(key))); // 22 > 20
    expect(statuses).toEqual([200, 200, '429 credits_exhausted', 200, 200, '429 credits_exhausted']);
    expect((refused.json as Record<string, unknown>).error).toBe(
      "this key's 20 credits are spent (this batch of 2 rows at 3 credits a row costs 6; 5 left); an administrator can add more",
    );
    // The runtime saw the three batches it answered, not the refused ones.
    expect((await metric(runtime)) - runtimeBefore).toBe(3);
    expect((await metric(rejected)) - rejectedBefore).toBe(2);
    // The rows of the admitted batches in the key's usage (flushed each second), beside its calls.
    await waitUntil(
      'the rows are in the key usage',
      async () => (await rc.hget(redisKeys.keyUsage(grant.id), 'rows')) === '6',
      {
        timeoutMs: 10_000,
      },
    );
    const totals = await rc.hgetall(redisKeys.keyUsage(grant.id));
    expect([totals.count, totals.refused, totals.rows]).toEqual(['4', '2', '6']);
    expect(await readKeyUsage(rc, [grant.id])).toEqual(
      new Map([[grant.id, expect.objectContaining({ rows: 6 })]]),
    );
  });
});

describe('per-model metrics at the gateway', () => {
  const features = (shape: number[], data: number[]) => ({
    inputs: [{ name: 'features', datatype: 'FP32', shape, data }],
  });

  /** The value of one exact series in the gateway's /metrics, 0 when absent. */
  async function series(): Promise<(name: string) => number> {
    const text = await (await fetch(`${base}/metrics`)).text();
    return (name) => {
      const line = text.split('\n').find((l) => l.startsWith(`${name} `));
      return line === undefined ? 0 : Number(line.slice(name.length + 1));
    };
  }

  test('counts each model’s calls by status and code, its V2 rejections, and times the gateway and the runtime', async () => {
    const ok = 'tollgate_model_requests_total{model="model-iris",version="",status="200",code=""}';
    const shape =
      'tollgate_model_requests_total{model="model-iris",version="",status="400",code="shape_data_mismatch"}';
    const rejected =
      'tollgate_model_rejected_total{model="model-iris",version="",code="shape_data_mismatch"}';
    const runtimeError =
      'tollgate_model_requests_total{model="model-iris",version="",status="400",code="inference_error"}';
    const runtimeRejected =
      'tollgate_model_rejected_total{model="model-iris",version="",code="inference_error"}';
    const total = 'tollgate_model_request_duration_seconds_count{model="model-iris",version=""}';
    const runtime = 'tollgate_model_runtime_duration_seconds_count{model="model-iris",version=""}';
    const before = await series();

    for (let i = 0; i < 3; i++)
      expect((await infer('model-iris', features([1, 4], [1, 2, 3, 4]))).status).toBe(200);
    expect((await infer('model-iris', features([2, 4], [1, 2, 3, 4]))).status).toBe(400);
    const scores = await infer('model-iris', {
      ...features([1, 4], [1, 2, 3, 4]),
      outputs: [{ name: 'scores' }],
    });
    expect(scores.json.code).toBe('inference_error');
    // A model nobody has is not a label: names from the wire never become series.
    expect((await infer('model-nobody', features([1, 4], [1, 2, 3, 4]))).status).toBe(404);

    const after = await series();
    const delta = (name: string) => after(name) - before(name);
    expect(delta(ok)).toBe(3);
    expect([delta(shape), delta(rejected)]).toEqual([1, 1]);
    // The runtime's own refusal is counted, but is no rejection by the gateway's checks.
    expect([delta(runtimeError), delta(runtimeRejected)]).toEqual([1, 0]);
    // Every call is timed; only those that reached the runtime have a runtime share.
    expect(delta(total)).toBe(5);
    expect(delta(runtime)).toBe(4);
    // The gateway's request count names the module of the key the calls were made with.
    expect(delta('tollgate_gateway_requests_total{kind="v2",status="200",module="platform"}')).toBe(3);
    expect(after('tollgate_model_in_flight{model="model-iris"}')).toBe(0);
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).not.toContain('model-nobody');
  });
});

describe('a redeployed model', () => {
  test('made again under its name (a new uid), it starts with none of the last one’s calls', async () => {
    const { uri, folder } = uploaded.get('model-wine') ?? { uri: '', folder: '' };
    const request = await sample('model-wine');
    const callsOf = async (uid: string): Promise<number> => {
      const account = modelAccount('default', 'model-wine', uid);
      const usage = (await readModelUsage(rc, [account])).get(account);
      return (usage?.perMinute ?? []).reduce((sum, p) => sum + p.calls, 0);
    };
    // The spec's cases called it before: these three come on top, under its uid.
    const before = await callsOf('uid-model-wine');
    for (let i = 0; i < 3; i++) expect((await infer('model-wine', request)).status).toBe(200);
    await waitUntil(
      'the first Model’s calls recorded under its uid',
      async () => (await callsOf('uid-model-wine')) >= before + 3,
      { timeoutMs: 20_000 },
    );
    // Deleted and made again under the name: the API server gives it a new uid.
    const again = modelResource('model-wine', uri);
    again.metadata.uid = 'uid-model-wine-again';
    await served.serve(again, folder);
    expect(await callsOf('uid-model-wine-again')).toBe(0);
    // Its calls are its own once its route reaches the gateway; the first Model's stay as they were.
    let made = 0;
    await waitUntil(
      'a call recorded under the new uid',
      async () => {
        expect((await infer('model-wine', request)).status).toBe(200);
        made++;
        return (await callsOf('uid-model-wine-again')) > 0;
      },
      { timeoutMs: 20_000 },
    );
    // Every call counted once, under one Model or the other, never both.
    await waitUntil(
      'every call recorded',
      async () =>
        (await callsOf('uid-model-wine')) - before + (await callsOf('uid-model-wine-again')) === 3 + made,
      { timeoutMs: 20_000 },
    );
    const first = await callsOf('uid-model-wine');
    for (let i = 0; i < 2; i++) expect((await infer('model-wine', request)).status).toBe(200);
    await waitUntil(
      'the new Model’s calls recorded',
      async () => (await callsOf('uid-model-wine-again')) >= 2,
      { timeoutMs: 20_000 },
    );
    expect(await callsOf('uid-model-wine')).toBe(first);
  });

  test('its new metadata is used as soon as its route changes', async () => {
    // Version 2 of model-reviews names its input "review" instead of "text".
    const m = await minio();
    const v2 = path.join(work, 'model-reviews-v2');
    await cp(path.join(models, 'model-reviews'), v2, { recursive: true });
    const settingsFile = path.join(v2, 'model-settings.json');
    const settings = JSON.parse(await readFile(settingsFile, 'utf8')) as { inputs: Array<{ name: string }> };
    (settings.inputs[0] as { name: string }).name = 'review';
    await writeFile(settingsFile, JSON.stringify(settings));
    const uri = await uploadFolder(m, `inference-v2-${Date.now().toString(36)}`, 'model-reviews', v2);
    const text = (name: string) => ({
      inputs: [
        { name, datatype: 'BYTES', shape: [1], data: ['great quality'], parameters: { content_type: 'str' } },
      ],
    });

    expect((await infer('model-reviews', text('text'))).status).toBe(200);
    const model = modelResource('model-reviews', uri);
    model.metadata.generation = 2;
    await served.serve(model, v2);

    // The route change reaches the gateway by pub/sub; until then the old runtime (stopped) is 503.
    let old = await infer('model-reviews', text('text'));
    for (let i = 0; i < 50 && old.status === 503; i++) {
      expect(old.json.code).toBe('model_not_ready');
      await new Promise((resolve) => setTimeout(resolve, 100));
      old = await infer('model-reviews', text('text'));
    }
    expect([old.status, old.json.code]).toEqual([400, 'unknown_input']);
    expect(old.json.error).toBe(
      "input 'text' is not an input of model 'model-reviews'; its inputs are 'review' (BYTES [-1])",
    );
    const renamed = await infer('model-reviews', text('review'));
    expect(renamed.status).toBe(200);
    expect(outputsByName(renamed).predict?.data).toEqual(['positive']);
  });
});
