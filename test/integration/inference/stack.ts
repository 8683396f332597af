import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createLogger } from '../../../common/logger.js';
import { checkModelFolder } from '../../../common/model-settings/check-folder.js';
import { redisKeys } from '../../../common/redis/schema.js';
import type { Model } from '../../../common/resources/model.js';
import { RouteWriter } from '../../../common/routes/workflow-routes.js';
import { LocalMlserverDriver } from '../../../operator/serving/local-mlserver.js';
import type { RuntimeState } from '../../../operator/serving/runtime-driver.js';
import type { MinioInfo } from '../../harness/index.js';
import { venv } from '../../harness/index.js';
import type { Redis } from 'ioredis';
import { testSealer } from '../signing.js';
import { aModel } from '../../builders/resources.js';

const run = promisify(execFile);
export const ROOT = path.resolve(import.meta.dirname, '../../..');

/** Trains the example cases with the venv's scikit-learn into a fresh directory. */
export async function trainExamples(cases: string[]): Promise<string> {
  const out = await mkdtemp(path.join(tmpdir(), 'tollgate-models-'));
  await run(venv().python, [path.join(ROOT, 'examples/train.py'), '--out', out, ...cases], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  return out;
}

/** What scikit-learn computes in-process for a request file (examples/predict.py). */
export async function predictInProcess(
  folder: string,
  requestFile: string,
): Promise<Record<string, unknown[]>> {
  const { stdout } = await run(venv().python, [path.join(ROOT, 'examples/predict.py'), folder, requestFile], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout) as Record<string, unknown[]>;
}

export function s3Env(m: MinioInfo): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: m.accessKeyId,
    AWS_SECRET_ACCESS_KEY: m.secretAccessKey,
    AWS_REGION: m.region,
    AWS_ENDPOINT_URL: m.endpoint,
  };
}

/** Uploads a model folder as a data scientist would: every file under s3://<bucket>/<prefix>/. */
export async function uploadFolder(
  m: MinioInfo,
  bucket: string,
  prefix: string,
  folder: string,
): Promise<string> {
  const s3 = new S3Client({
    endpoint: m.endpoint,
    region: m.region,
    forcePathStyle: true,
    credentials: { accessKeyId: m.accessKeyId, secretAccessKey: m.secretAccessKey },
  });
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket })).catch((err: { name?: string }) => {
      if (err.name !== 'BucketAlreadyOwnedByYou') throw err;
    });
    const files = await readdir(folder, { recursive: true, withFileTypes: true });
    for (const f of files.filter((e) => e.isFile())) {
      const full = path.join(f.parentPath, f.name);
      const key = `${prefix}/${path.relative(folder, full).split(path.sep).join('/')}`;
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: await readFile(full) }));
    }
  } finally {
    s3.destroy();
  }
  return `s3://${bucket}/${prefix}`;
}

export function modelResource(name: string, storageUri: string, workflow?: string): Model {
  return aModel(
    name,
    { storageUri, ...(workflow === undefined ? {} : { workflow }) },
    { namespace: 'default', uid: `uid-${name}`, generation: 1 },
  );
}

/**
 * Serves Models with the standalone runtime driver (pull from storage, one MLServer each) and
 * publishes their routes as the operator does once they are ready.
 */
export class ServedModels {
  readonly driver: LocalMlserverDriver;
  private readonly changed = new Set<() => void>();

  constructor(
    workDir: string,
    env: Record<string, string>,
    private readonly redis: Redis,
  ) {
    this.driver = new LocalMlserverDriver({
      mlserver: venv().mlserver,
      workDir,
      credentials: { envFor: async () => ({ ...process.env, ...env }) },
      log: createLogger('local-mlserver-test', 'silent'),
    });
    void this.driver.start(() => {
      for (const wake of this.changed) wake();
    });
  }

  /** Applies the Model until its runtime is ready (or failed), then writes its routes. */
  async serve(model: Model, localFolder: string): Promise<RuntimeState> {
    const files = (await readdir(localFolder, { recursive: true, withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => path.relative(localFolder, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
    const check = await checkModelFolder(
      { files, read: (p) => readFile(path.join(localFolder, p), 'utf8') },
      model.metadata.name,
    );
    if (!check.ok) throw new Error(`${model.metadata.name}: ${JSON.stringify(check.problems)}`);
    const plan = {
      model,
      workload: model.metadata.name,
      version: undefined,
      storageUri: model.spec.storageUri ?? '',
      replicas: model.spec.replicas ?? 1,
      settings: check.settings,
      settingsGenerated: check.generated,
      image: '',
      gateway: 'central' as const,
    };
    for (;;) {
      const changed = new Promise<void>((resolve) => {
        const wake = (): void => {
          this.changed.delete(wake);
          resolve();
        };
        this.changed.add(wake);
      });
      const state = await this.driver.apply(plan);
      if (state.failure !== undefined) throw new Error(`${model.metadata.name}: ${state.failure.message}`);
      const routes = new RouteWriter(this.redis, await testSealer());
      const source = `model/default/${model.metadata.name}`;
      const workflow = model.spec.workflow;
      if (state.readyReplicas === 0) {
        // As the operator does: a model's routes exist only while it has a ready replica.
        await routes.remove(redisKeys.modelRoute(model.metadata.name), source);
        if (workflow !== undefined)
          await routes.remove(redisKeys.bdaRoute(workflow, model.metadata.name), source);
      } else {
        await routes.put(redisKeys.modelRoute(model.metadata.name), {
          url: state.url,
          source,
          ...(model.metadata.uid === undefined ? {} : { uid: model.metadata.uid }),
          ...(workflow ? { workflow } : {}),
        });
        if (workflow !== undefined) {
          await routes.put(redisKeys.bdaRoute(workflow, model.metadata.name), {
            url: state.url,
            source,
            workflow,
          });
        }
        // The operator marks its index complete once it has written it.
        await this.redis.set(redisKeys.indexMarker, new Date().toISOString());
        return state;
      }
      await changed;
    }
  }

  stop(): Promise<void> {
    return this.driver.stop();
  }
}
