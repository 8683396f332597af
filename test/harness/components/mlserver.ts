// MLServer from the project venv, serving one models folder on free loopback ports.
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { venvPaths } from '../venv.js';
import { freePort } from '../../../common/net/free-port.js';
import type { Managed, ProcessRegistry } from '../processes.js';
import { httpOk, waitUntil } from '../wait.js';

export interface MlserverOptions {
  /** MLServer's parallel inference workers; 0 (default) serves from the main process, faster to start. */
  parallelWorkers?: number;
  /** Extra environment, e.g. MLSERVER_MODEL_* overrides. */
  env?: Record<string, string>;
}

export interface MlserverInstance {
  url: string;
  grpcPort: number;
  metricsPort: number;
  proc: Managed;
}

export async function startMlserver(
  reg: ProcessRegistry,
  runDir: string,
  name: string,
  modelsDir: string,
  opts: MlserverOptions = {},
): Promise<MlserverInstance> {
  const [httpPort, grpcPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  // MLServer writes .metrics and .envs under its working directory; keep them in the run dir.
  const work = mkdtempSync(join(runDir, `${name}-`));
  const proc = reg.spawn(name, venvPaths().mlserver, ['start', modelsDir], {
    cwd: work,
    env: {
      ...process.env,
      MLSERVER_HOST: '127.0.0.1',
      MLSERVER_HTTP_PORT: String(httpPort),
      MLSERVER_GRPC_PORT: String(grpcPort),
      MLSERVER_METRICS_PORT: String(metricsPort),
      MLSERVER_PARALLEL_WORKERS: String(opts.parallelWorkers ?? 0),
      MLSERVER_METRICS_DIR: join(work, '.metrics'),
      MLSERVER_ENVIRONMENTS_DIR: join(work, '.envs'),
      ...opts.env,
    },
    stopTimeoutMs: 10_000,
  });
  const url = `http://127.0.0.1:${httpPort}`;
  await waitUntil(`mlserver ${modelsDir}`, () => httpOk(`${url}/v2/health/ready`), {
    timeoutMs: 120_000,
    proc,
    intervalMs: 250,
  });
  return { url, grpcPort, metricsPort, proc };
}
