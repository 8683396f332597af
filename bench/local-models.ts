import { execFile } from 'node:child_process';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '../common/logger.js';
import type { Model } from '../common/resources/model.js';
import { LocalMlserverDriver } from '../operator/serving/local-mlserver.js';
import type { RuntimeState } from '../operator/serving/runtime-driver.js';
import { ProcessEnvCredentials } from '../operator/storage/credentials.js';
import { ROOT } from './support.js';

/** Models the benches serve: the iris example, trained here, under each name, in one MLServer. */
export interface LocalModels {
  /** Each name's runtime state (its REST url, its gRPC address). */
  states: Map<string, RuntimeState>;
  stop(): Promise<void>;
}

/**
 * Trains the iris example into `dir` and serves it under each of `names` with the standalone
 * runtime driver (one shared MLServer process, as `tollgate dev` runs them), until every one is
 * ready.
 */
export async function serveIris(
  dir: string,
  names: readonly string[],
  log: Logger,
  /** Names served by an MLServer process of their own (another team's runtime, not the shared one). */
  own: readonly string[] = [],
): Promise<LocalModels> {
  const driver = new LocalMlserverDriver({
    mlserver: join(ROOT, '.venv/bin/mlserver'),
    workDir: join(dir, 'runtimes'),
    credentials: new ProcessEnvCredentials(),
    log,
  });
  await promisify(execFile)(join(ROOT, '.venv/bin/python'), [
    join(ROOT, 'examples/train.py'),
    '--out',
    join(dir, 'models'),
    'iris',
  ]);
  let wake = (): void => undefined;
  await driver.start(() => wake());
  const states = new Map<string, RuntimeState>();
  try {
    for (const name of names) {
      // Each name its own folder, its settings naming it (MLServer loads a model by that name).
      const folder = join(dir, 'models', name);
      if (name !== 'model-iris') {
        await cp(join(dir, 'models', 'model-iris'), folder, { recursive: true });
        const file = join(folder, 'model-settings.json');
        const settings = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
        await writeFile(file, JSON.stringify({ ...settings, name }));
      }
      const model = {
        apiVersion: 'tollgate.dev/v1alpha1',
        kind: 'Model',
        metadata: {
          name,
          namespace: 'default',
          uid: `bench-${name}`,
          generation: 1,
          ...(own.includes(name) ? { annotations: { 'tollgate.dev/runtime': 'own' } } : {}),
        },
        spec: { storageUri: `file://${folder}` },
      } as Model;
      const plan = {
        model,
        workload: name,
        version: undefined,
        storageUri: model.spec.storageUri ?? '',
        replicas: 1,
        settings: {
          name,
          implementation: 'mlserver_sklearn.SKLearnModel',
          parameters: { uri: './model.joblib' },
        },
        settingsGenerated: false,
        image: '',
        gateway: 'central' as const,
      };
      for (;;) {
        const changed = new Promise<void>((resolve) => (wake = resolve));
        const state = await driver.apply(plan);
        if (state.failure) throw new Error(`${name}: ${state.failure.message}`);
        if (state.readyReplicas > 0) {
          states.set(name, state);
          break;
        }
        await changed;
      }
    }
  } catch (err) {
    await driver.stop();
    throw err;
  }
  return { states, stop: () => driver.stop() };
}
