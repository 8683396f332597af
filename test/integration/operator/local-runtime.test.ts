import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createLogger } from '../../../common/logger.js';
import type { Model } from '../../../common/resources/model.js';
import { LocalMlserverDriver } from '../../../operator/serving/local-mlserver.js';
import type { RuntimePlan, RuntimeState } from '../../../operator/serving/runtime-driver.js';
import { venv } from '../../harness/index.js';

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
    const model: Model = {
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'Model',
      metadata: { name: 'model-nul', namespace: 'default', uid: 'u-1', generation: 1 },
      // Node refuses an environment value holding a NUL byte when it spawns the process.
      spec: { storageUri: pathToFileURL(folder).href, env: [{ name: 'BROKEN', value: 'a\u0000b' }] },
    };
    const plan: RuntimePlan = {
      model,
      settings: {
        name: 'model-nul',
        implementation: 'mlserver_sklearn.SKLearnModel',
        parameters: { uri: './model.joblib' },
      },
      settingsGenerated: false,
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
