import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { freePort, minio, otelCollector, redis, venv, type CollectorInfo } from '../../harness/index.js';
import { readSpans } from '../../harness/components/otel-collector.js';
import { predictInProcess, ROOT, s3Env, trainExamples, uploadFolder } from './stack.js';
import { until } from './dev-process.js';

const run = promisify(execFile);
const TSX = path.join(ROOT, 'node_modules/tsx/dist/cli.mjs');
const CLI = path.join(ROOT, 'cli/main.ts');

/** A V2 readiness endpoint that answers 200. */
const readyAt = async (url: string): Promise<boolean> => {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1_000) })).status === 200;
  } catch {
    return false;
  }
};

const answers = async (url: string): Promise<boolean> => {
  try {
    await fetch(url, { signal: AbortSignal.timeout(1_000) });
    return true;
  } catch {
    return false;
  }
};

/**
 * `tollgate dev` as a user runs it: Model manifests in a directory (one file://, one s3:// on
 * MinIO), a key created through the management API with a `tollgate token`, inference through the
 * gateway, the operator's status written back to the manifest, a deleted manifest taking its
 * MLServer process with it, and SIGTERM stopping everything.
 */
describe('tollgate dev: standalone mode', () => {
  let models: string;
  let collector: CollectorInfo;
  let state: string;
  let dev: ChildProcess;
  let base: string;
  let key: string;
  let devLog = '';

  const manifest = (name: string, storageUri: string, extra = ''): string =>
    `apiVersion: tollgate.dev/v1alpha1\nkind: Model\nmetadata:\n  name: ${name}\nspec:\n  storageUri: ${storageUri}\n${extra}`;

  const status = async (name: string): Promise<{ phase?: string; url?: string } | undefined> => {
    const doc = parse(await readFile(path.join(state, 'models', `${name}.yaml`), 'utf8')) as {
      status?: { phase?: string; url?: string };
    };
    return doc.status;
  };

  const infer = (model: string, body: Buffer | string): Promise<Response> =>
    fetch(`${base}/v2/models/${model}/infer`, {
      method: 'POST',
      headers: { authorization: `Apikey ${key}`, 'content-type': 'application/json' },
      body,
    });

  beforeAll(async () => {
    const [r, m] = await Promise.all([redis(), minio()]);
    collector = await otelCollector('standalone');
    models = await trainExamples(['iris', 'reviews']);
    state = await mkdtemp(path.join(tmpdir(), 'tollgate-dev-'));
    await mkdir(path.join(state, 'models'));
    const reviews = await uploadFolder(
      m,
      `standalone-${Date.now().toString(36)}`,
      'reviews',
      path.join(models, 'model-reviews'),
    );
    await writeFile(
      path.join(state, 'models', 'model-iris.yaml'),
      // Every call logged, its class probabilities redacted; model-reviews logs none of its calls.
      manifest(
        'model-iris',
        `file://${path.join(models, 'model-iris')}`,
        '  logging:\n    sampleRate: 1\n    redact: [predict_proba]\n',
      ),
    );
    await writeFile(
      path.join(state, 'models', 'model-reviews.yaml'),
      manifest('model-reviews', reviews, '  logging:\n    sampleRate: 0\n'),
    );

    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const env = {
      ...process.env,
      ...s3Env(m),
      TOLLGATE_STATE_DIR: state,
      TOLLGATE_PAYLOAD_LOG_INTERVAL_MS: '200',
      // Traced, through the standard variables alone.
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_TRACES_SAMPLER: 'always_on',
      OTEL_SERVICE_NAME: 'tollgate-dev-test',
      TOLLGATE_REDIS_URL: r.url,
      LOG_LEVEL: 'info',
    };
    dev = spawn(process.execPath, [TSX, CLI, 'dev', '--port', String(port), '--mlserver', venv().mlserver], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (c: Buffer): void => void (devLog = (devLog + c.toString()).slice(-20_000));
    dev.stdout?.on('data', keep);
    dev.stderr?.on('data', keep);
    await until('the gateway', async () => ((await fetch(`${base}/readyz`)).ok ? true : undefined), 60_000);

    const token = (await run(process.execPath, [TSX, CLI, 'token', '--user', 'dana'], { env })).stdout.trim();
    const created = await fetch(`${base}/api/v1/apikeys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ module: 'platform', roles: ['models:inference'], name: 'standalone test' }),
    });
    expect(created.status).toBe(201);
    key = ((await created.json()) as { key: string }).key;
  }, 300_000);

  afterAll(async () => {
    if (dev !== undefined && dev.exitCode === null) {
      dev.kill('SIGKILL');
    }
    for (const dir of [state, models]) if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  test('Models from manifests (file:// and s3://) are served through the gateway', async () => {
    for (const name of ['model-iris', 'model-reviews']) {
      await until(`${name} ready`, async () => ((await status(name))?.phase === 'Ready' ? true : undefined));
    }
    for (const name of ['model-iris', 'model-reviews']) {
      const request = path.join(models, 'requests', `${name}.json`);
      const res = await infer(name, await readFile(request));
      expect(res.status).toBe(200);
      const body = (await res.json()) as { outputs: Array<{ name: string; data: unknown[] }> };
      const expected = await predictInProcess(path.join(models, name), request);
      expect(body.outputs.find((o) => o.name === 'predict')?.data).toEqual(expected.predict);
    }
  });

  test('the checklist applies in standalone mode too', async () => {
    const res = await infer(
      'model-iris',
      JSON.stringify({ inputs: [{ name: 'features', datatype: 'FP32', shape: [2, 4], data: [1, 2, 3] }] }),
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: "input 'features': shape [2,4] needs 8 values, data has 3",
      code: 'shape_data_mismatch',
      field: 'inputs[features].data',
    });
  });

  test('a Model that logs its calls has them in the state directory, partitioned, refusals included', async () => {
    const logs = path.join(state, 'payload-logs');
    const records = async (model: string): Promise<Array<Record<string, unknown>>> => {
      const files = (await readdir(logs, { recursive: true }).catch(() => [] as string[])).filter(
        (f) => f.startsWith(`namespace=default/model=${model}/`) && f.endsWith('.jsonl'),
      );
      const lines: Array<Record<string, unknown>> = [];
      for (const f of files) {
        expect(f).toMatch(
          new RegExp(
            // A manifest written by hand names no uid: the standalone operator gives it manifest-<name>.
            `^namespace=default/model=${model}/uid=manifest-${model}/date=\\d{4}-\\d{2}-\\d{2}/hour=\\d{2}/[\\w.-]+\\.jsonl$`,
          ),
        );
        for (const line of (await readFile(path.join(logs, f), 'utf8')).trim().split('\n'))
          lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      return lines;
    };
    const call = (model: string, body: string, requestId: string): Promise<Response> =>
      fetch(`${base}/v2/models/${model}/infer`, {
        method: 'POST',
        headers: {
          authorization: `Apikey ${key}`,
          'content-type': 'application/json',
          'x-request-id': requestId,
        },
        body,
      });
    for (const name of ['model-iris', 'model-reviews'])
      await until(`${name} ready`, async () => ((await status(name))?.phase === 'Ready' ? true : undefined));
    const run = Math.random().toString(36).slice(2, 8);
    const requestText = await readFile(path.join(models, 'requests', 'model-iris.json'), 'utf8');
    const request = JSON.parse(requestText) as Record<string, unknown>;
    expect((await call('model-iris', requestText, `ok-${run}`)).status).toBe(200);
    const wrong = { inputs: [{ name: 'features', datatype: 'FP32', shape: [2, 4], data: [1, 2, 3] }] };
    expect((await call('model-iris', JSON.stringify(wrong), `bad-${run}`)).status).toBe(400);
    const reviews = await readFile(path.join(models, 'requests', 'model-reviews.json'), 'utf8');
    expect((await call('model-reviews', reviews, `reviews-${run}`)).status).toBe(200);
    const logged = await until('model-iris calls logged', async () => {
      const found = (await records('model-iris')).filter((r) => String(r['requestId']).endsWith(run));
      return found.length >= 2 ? found : undefined;
    });
    expect(logged).toHaveLength(2);
    const ok = logged.find((r) => r['requestId'] === `ok-${run}`);
    expect(ok).toMatchObject({ model: 'model-iris', version: null, code: null, request });
    // The record names its call's trace, which the collector got from the dev process.
    expect(ok?.['traceId']).toMatch(/^[0-9a-f]{32}$/);
    await until('the call’s span at the collector', async () =>
      readSpans(collector.log).find(
        (s) =>
          s.traceId === ok?.['traceId'] && s.service === 'tollgate-dev-test' && s.kind.includes('Server'),
      ),
    );
    const outputs = (ok?.['response'] as { outputs: Array<{ name: string; data: unknown }> }).outputs;
    expect(outputs.find((o) => o.name === 'predict_proba')?.data).toBe('[redacted]');
    expect(Array.isArray(outputs.find((o) => o.name === 'predict')?.data)).toBe(true);
    expect(typeof ok?.['keyId']).toBe('string');
    expect(JSON.stringify(logged)).not.toContain(key);
    expect(logged.find((r) => r['requestId'] === `bad-${run}`)).toMatchObject({
      status: 400,
      code: 'shape_data_mismatch',
      request: { inputs: [{ name: 'features', shape: [2, 4], data: [1, 2, 3] }] },
      // A refusal may quote the values it refused: a model that redacts keeps only its code.
      response: { code: 'shape_data_mismatch', error: '[redacted]' },
    });
    // sampleRate 0: model-reviews was called, and nothing of it is logged (the iris records were
    // written in the same interval).
    expect(await records('model-reviews')).toEqual([]);
  });

  test('the models share one MLServer; deleting a manifest unloads its model and the others go on', async () => {
    const url = (await status('model-iris'))?.url;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await status('model-reviews'))?.url).toBe(url);
    expect(await readyAt(`${url}/v2/models/model-iris/ready`)).toBe(true);
    await rm(path.join(state, 'models', 'model-iris.yaml'));
    await until(
      'model-iris gone',
      async () => ((await infer('model-iris', '{}')).status === 404 ? true : undefined),
      30_000,
    );
    await until(
      'model-iris unloaded',
      async () => ((await readyAt(`${url}/v2/models/model-iris/ready`)) ? undefined : true),
      30_000,
    );
    expect(await readyAt(`${url}/v2/models/model-reviews/ready`)).toBe(true);
  });

  test('an MLServer that dies is started again, and its models are loaded and answer again', async () => {
    // The shared process serves the runtimes directory as its repository.
    const shared = async (): Promise<number> => {
      const { stdout } = await run('pgrep', ['-f', `mlserver start ${path.join(state, 'runtimes')}$`]);
      return Number(stdout.trim().split('\n')[0]);
    };
    const pid = await shared();
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');
    // A new process (the gateway may bridge the short gap: it tries a refused call again).
    await until(
      'a new MLServer',
      async () => {
        const now = await shared();
        return now > 0 && now !== pid ? true : undefined;
      },
      60_000,
    );
    const request = await readFile(path.join(models, 'requests', 'model-reviews.json'));
    await until('model-reviews back', async () =>
      (await infer('model-reviews', request)).status === 200 ? true : undefined,
    );
  }, 240_000);

  test('SIGTERM stops the gateway, the operator and every MLServer it started', async () => {
    const url = (await status('model-reviews'))?.url;
    expect(await answers(`${url}/v2/health/live`)).toBe(true);
    const exited = new Promise<number | null>((resolve) => dev.once('exit', (code) => resolve(code)));
    dev.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(await answers(`${url}/v2/health/live`)).toBe(false);
    expect(await answers(`${base}/readyz`)).toBe(false);
  }, 60_000);
});
