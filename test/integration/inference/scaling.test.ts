import { cp, mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import type { Model } from '../../../common/resources/model.js';
import { aWorkflow, modelManifest } from '../../builders/resources.js';
import { redis } from '../../harness/index.js';
import { startDev, until, type Dev } from './dev-process.js';
import { trainExamples } from './stack.js';

interface Status {
  phase?: string;
  url?: string;
  replicas?: number;
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
}

/**
 * Scale to zero and back in standalone mode (`tollgate dev`): an idle model's MLServer is stopped
 * after its idle window, and the next calls are held by the gateway, together, while one starts;
 * past the activation timeout a held call gets 503 model_scaling_up.
 */
describe('scaling to and from zero (standalone)', () => {
  let work: string;
  let state: string;
  let dev: Dev | undefined;
  let key: string;
  const request = () => readFile(path.join(work, 'requests', 'model-iris.json'));
  const status = async (name: string): Promise<Status> =>
    (parse(await readFile(path.join(state, 'models', `${name}.yaml`), 'utf8')) as { status?: Status })
      .status ?? {};
  const ready = (s: Status) => s.conditions?.find((c) => c.type === 'Ready');
  const infer = async (model: string) =>
    fetch(`${dev?.base ?? ''}/v2/models/${model}/infer`, {
      method: 'POST',
      headers: { authorization: `Apikey ${key}`, 'content-type': 'application/json' },
      body: await request(),
    });
  const manifest = (name: string, scaling: NonNullable<Model['spec']['scaling']>) =>
    writeFile(
      path.join(state, 'models', `${name}.yaml`),
      // Serving vera's workflow wf-scale (its record below), so her bda keys may call it.
      modelManifest(name, { storageUri: `file://${path.join(work, name)}`, workflow: 'wf-scale', scaling }),
    );
  const alive = (url: string) =>
    fetch(`${url}/v2/health/live`, { signal: AbortSignal.timeout(1_000) }).then(
      () => true,
      () => false,
    );

  beforeAll(async () => {
    const r = await redis();
    work = await trainExamples(['iris']);
    state = await mkdtemp(path.join(tmpdir(), 'tollgate-scaling-'));
    await mkdir(path.join(state, 'models'));
    await mkdir(path.join(state, 'workflows'));
    await writeFile(
      path.join(state, 'workflows', 'wf-scale.yaml'),
      stringify(aWorkflow('wf-scale', 'vera', ['default'])),
    );
    await manifest('model-iris', { minReplicas: 0, idleSeconds: 8, scaleDownSeconds: 0 });
    dev = await startDev(state, r.url);
    key = await dev.key(['models:inference']);
  }, 300_000);

  afterAll(async () => {
    await dev?.stop();
    for (const dir of [state, work]) if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  test('an idle model goes to zero; calls at zero wait together for one start, and are answered', async () => {
    // Answered whether it is still up or already at zero (a busy machine starts MLServer slowly).
    await until('a first answer', async () =>
      (await infer('model-iris')).status === 200 ? true : undefined,
    );
    const up = await until(
      'model-iris serving',
      async () => {
        const s = await status('model-iris');
        return s.phase === 'Ready' && s.url ? s : undefined;
      },
      30_000,
    );
    const url = up.url ?? '';
    expect(await alive(url)).toBe(true);

    const asleep = await until(
      'model-iris scaled to zero',
      async () => {
        const s = await status('model-iris');
        return ready(s)?.reason === 'ScaledToZero' ? s : undefined;
      },
      60_000,
    );
    expect(asleep.phase).toBe('Ready');
    expect(asleep.replicas).toBe(0);
    expect(ready(asleep)?.message).toBe(
      'no replica after a while without calls; the next call waits while one starts',
    );
    await until('its MLServer stopped', async () => ((await alive(url)) ? undefined : true), 30_000);

    const before = (dev?.log().match(/model woke up/g) ?? []).length;
    // Ready at zero (a call would be answered), and asking does not wake it.
    const probe = await fetch(`${dev?.base ?? ''}/v2/models/model-iris/ready`, {
      headers: { authorization: `Apikey ${key}` },
    });
    expect([probe.status, await probe.json()]).toEqual([200, { name: 'model-iris', ready: true }]);
    expect((await status('model-iris')).replicas).toBe(0);
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 8 }, () => infer('model-iris')));
    const coldStartMs = performance.now() - started;
    process.stdout.write(`standalone cold start from zero: ${Math.round(coldStartMs)} ms\n`);
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 8 }, () => 200));
    const bodies = (await Promise.all(answers.map((a) => a.json()))) as Array<{ model_name: string }>;
    expect(bodies.every((b) => b.model_name === 'model-iris')).toBe(true);
    // Eight calls, one wake-up: they waited together.
    expect((dev?.log().match(/model woke up/g) ?? []).length - before).toBe(1);
    const awake = await status('model-iris');
    expect([awake.phase, awake.replicas, ready(awake)?.reason]).toEqual(['Ready', 1, 'Ready']);
  }, 180_000);

  test('a workflow’s call to its model at zero is held the same way', async () => {
    await until(
      'model-iris at zero again',
      async () => (ready(await status('model-iris'))?.reason === 'ScaledToZero' ? true : undefined),
      60_000,
    );
    const bda = await dev?.key(['wf-scale'], 'bda');
    const res = await fetch(`${dev?.base ?? ''}/events/bda/wf-scale/model-iris/v2/models/model-iris/infer`, {
      method: 'POST',
      headers: { authorization: `Apikey ${bda ?? ''}`, 'content-type': 'application/json' },
      body: await request(),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ model_name: 'model-iris' });
  }, 120_000);

  test('a call held past the activation timeout gets 503 model_scaling_up with Retry-After; the start goes on', async () => {
    // A process of its own (the annotation) takes seconds to start: longer than this model's wait.
    // The same estimator, under its own name.
    const folder = path.join(work, 'model-iris-slow');
    await cp(path.join(work, 'model-iris'), folder, { recursive: true });
    const settings = JSON.parse(await readFile(path.join(folder, 'model-settings.json'), 'utf8')) as {
      name: string;
    };
    await writeFile(
      path.join(folder, 'model-settings.json'),
      JSON.stringify({ ...settings, name: 'model-iris-slow' }),
    );
    await writeFile(
      path.join(state, 'models', 'model-iris-slow.yaml'),
      modelManifest(
        'model-iris-slow',
        {
          storageUri: `file://${folder}`,
          scaling: { minReplicas: 0, idleSeconds: 8, scaleDownSeconds: 0, activationTimeoutSeconds: 1 },
        },
        { annotations: { 'tollgate.dev/runtime': 'own' } },
      ),
    );
    await until(
      'model-iris-slow at zero',
      async () => (ready(await status('model-iris-slow'))?.reason === 'ScaledToZero' ? true : undefined),
      90_000,
    );
    const held = await infer('model-iris-slow');
    expect(held.status).toBe(503);
    expect(held.headers.get('retry-after')).toBe('5');
    expect(await held.json()).toEqual({
      code: 'model_scaling_up',
      error:
        "model 'model-iris-slow' is starting a replica (it was scaled to zero) and none was ready within 1 s; retry shortly",
    });
    // The wake-up stands: the replica comes, and a later call is answered.
    await until(
      'model-iris-slow answers',
      async () => ((await infer('model-iris-slow')).status === 200 ? true : undefined),
      60_000,
    );
  }, 180_000);
});
