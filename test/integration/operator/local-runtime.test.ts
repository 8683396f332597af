import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createLogger } from '../../../common/logger.js';
import type { Model } from '../../../common/resources/model.js';
import { LocalMlserverDriver, mayShareRuntime } from '../../../operator/serving/local-mlserver.js';
import type { RuntimePlan, RuntimeState } from '../../../operator/serving/runtime-driver.js';
import { venv } from '../../harness/index.js';
import { trainExamples } from '../inference/stack.js';
import { aModel } from '../../builders/resources.js';

describe('standalone runtime driver', () => {
  let dir: string;
  let driver: LocalMlserverDriver | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tg-local-runtime-'));
  });

  afterEach(async () => {
    await driver?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('reports an MLServer that cannot be started on the Model instead of crashing the process', async () => {
    const folder = path.join(dir, 'storage');
    await mkdir(folder);
    await writeFile(path.join(folder, 'model-settings.json'), '{}');
    let wake: () => void = () => undefined;
    driver = new LocalMlserverDriver({
      mlserver: venv().mlserver,
      workDir: path.join(dir, 'work'),
      credentials: { envFor: async () => ({}) },
      log: createLogger('local-runtime-test', 'silent'),
    });
    await driver.start(() => wake());
    const model = aModel(
      'model-nul',
      // Node refuses an environment value holding a NUL byte when it spawns the process.
      { storageUri: pathToFileURL(folder).href, env: [{ name: 'BROKEN', value: 'a\u0000b' }] },
      { namespace: 'default', uid: 'u-1', generation: 1 },
    );
    const plan: RuntimePlan = {
      model,
      workload: 'model-nul',
      version: undefined,
      storageUri: pathToFileURL(folder).href,
      replicas: 1,
      settings: {
        name: 'model-nul',
        implementation: 'mlserver_sklearn.SKLearnModel',
        parameters: { uri: './model.joblib' },
      },
      settingsGenerated: false,
      gateway: 'central',
      image: '',
    };

    let state: RuntimeState = await driver.apply(plan);
    const deadline = Date.now() + 20_000;
    while (state.failure === undefined && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 250);
      });
      state = await driver.apply(plan);
    }
    expect(state.failure?.reason).toBe('RuntimeNotStarted');
    expect(state.failure?.message).toMatch(/^could not start MLServer: /);
    expect(state.readyReplicas).toBe(0);
  });
});

describe('standalone runtime driver: one shared MLServer process', () => {
  let models: string;
  let work: string;
  let driver: LocalMlserverDriver;
  let wake: () => void = () => undefined;

  const plan = (
    name: string,
    over: Partial<Model['spec']> = {},
    annotations?: Record<string, string>,
  ): RuntimePlan => ({
    model: aModel(
      name,
      { storageUri: pathToFileURL(path.join(models, name)).href, ...over },
      { namespace: 'default', uid: `u-${name}`, generation: 1, ...(annotations ? { annotations } : {}) },
    ),
    workload: name,
    version: undefined,
    storageUri: over.storageUri ?? pathToFileURL(path.join(models, name)).href,
    replicas: over.replicas ?? 1,
    settings: {
      name,
      implementation: 'mlserver_sklearn.SKLearnModel',
      parameters: { uri: './model.joblib' },
    },
    settingsGenerated: false,
    gateway: 'central',
    image: '',
  });

  /** Applies until the state satisfies `done` (the controller's loop, driven by onChange). */
  async function settle(p: RuntimePlan, done: (s: RuntimeState) => boolean): Promise<RuntimeState> {
    let state = await driver.apply(p);
    const deadline = Date.now() + 90_000;
    while (!done(state)) {
      if (Date.now() > deadline) throw new Error(`${p.model.metadata.name}: ${JSON.stringify(state)}`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 250);
      });
      state = await driver.apply(p);
    }
    return state;
  }

  const mlservers = async (): Promise<string[]> => {
    const { execFileSync } = await import('node:child_process');
    return execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes('mlserver start') && l.includes(work));
  };

  beforeAll(async () => {
    models = await trainExamples(['iris', 'reviews', 'digits']);
    work = await mkdtemp(path.join(tmpdir(), 'tg-shared-runtime-'));
    driver = new LocalMlserverDriver({
      mlserver: venv().mlserver,
      workDir: work,
      credentials: { envFor: async () => ({}) },
      log: createLogger('shared-runtime-test', 'silent'),
    });
    await driver.start(() => wake());
  }, 120_000);

  afterAll(async () => {
    await driver?.stop();
    expect(await mlservers()).toEqual([]);
    for (const d of [models, work]) if (d !== undefined) await rm(d, { recursive: true, force: true });
  });

  it('serves models without code of their own from one process; a folder with Python code, env or the annotation gets its own', async () => {
    const [iris, reviews] = await Promise.all([
      settle(plan('model-iris'), (s) => s.readyReplicas === 1),
      settle(plan('model-reviews'), (s) => s.readyReplicas === 1),
    ]);
    expect(iris.url).toBe(reviews.url);
    // model-digits brings image_pixels.py: a process of its own, where its folder is importable.
    const digits = await settle(plan('model-digits'), (s) => s.readyReplicas === 1);
    expect(digits.url).not.toBe(iris.url);
    expect(await mlservers()).toHaveLength(2);

    // spec.env (per process) or the annotation also ask for a process of their own.
    expect(mayShareRuntime(plan('model-x'))).toBe(true);
    expect(mayShareRuntime(plan('model-x', { env: [{ name: 'A', value: '1' }] }))).toBe(false);
    expect(mayShareRuntime(plan('model-x', {}, { 'tollgate.dev/runtime': 'own' }))).toBe(false);

    // Both models answer on the shared process.
    for (const name of ['model-iris', 'model-reviews']) {
      expect((await fetch(`${iris.url}/v2/models/${name}/ready`)).status).toBe(200);
    }
  }, 180_000);

  it('a model the shared process cannot load fails with MLServer’s reason; the others go on', async () => {
    const broken = plan('model-iris-broken', {
      storageUri: pathToFileURL(path.join(models, 'model-iris')).href,
    });
    const state = await settle(broken, (s) => s.failure !== undefined);
    expect(state.failure?.reason).toBe('ModelLoadFailed');
    expect(state.failure?.message).toMatch(/^MLServer could not load model-iris-broken: /);
    const iris = await driver.apply(plan('model-iris'));
    expect(iris.readyReplicas).toBe(1);
    await driver.remove({ namespace: 'default', name: 'model-iris-broken' }, 'model-iris-broken');
  }, 120_000);

  it('removing a model unloads it; the shared process stops with the last one', async () => {
    const { url } = await driver.apply(plan('model-iris'));
    // Asked by another Model (whose version's workload would have this name): left alone.
    await driver.remove({ namespace: 'default', name: 'model-iris' }, 'model-other');
    expect((await fetch(`${url}/v2/models/model-iris/ready`)).status).toBe(200);
    await driver.remove({ namespace: 'default', name: 'model-iris' }, 'model-iris');
    expect((await fetch(`${url}/v2/models/model-iris/ready`)).status).not.toBe(200);
    expect((await fetch(`${url}/v2/models/model-reviews/ready`)).status).toBe(200);
    await driver.remove({ namespace: 'default', name: 'model-reviews' }, 'model-reviews');
    await driver.remove({ namespace: 'default', name: 'model-digits' }, 'model-digits');
    expect(await mlservers()).toEqual([]);
  }, 120_000);
});
