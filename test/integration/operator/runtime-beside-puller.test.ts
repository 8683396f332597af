import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '../../../common/net/free-port.js';
import { PULL_THEN_IDLE, WAIT_THEN_SERVE } from '../../../operator/serving/model-workload.js';
import { venv } from '../../harness/index.js';

// A model's pod starts its runtime and its puller together (operator/serving/model-workload.ts):
// their two commands, run here as the pod runs them, with the real CLI and the real MLServer.
const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const CLI = path.join(ROOT, 'bin/tollgate.js');
const LAUNCHER = path.join(ROOT, 'images/mlserver/tollgate-mlserver');
const TRAIN = path.join(ROOT, 'test/integration/harness/fixtures/train_iris.py');

const children = new Set<ChildProcess>();

/** `sh -c <script> <name> ...args`, in a process group of its own (stopped with all it started). */
function sh(script: string, args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn('sh', ['-c', script, 'test', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

const exited = (child: ChildProcess): Promise<number | null> =>
  child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((r) => child.once('exit', r));

async function until(what: string, check: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const status = (url: string): Promise<number> =>
  fetch(url).then(
    (r) => r.status,
    () => 0,
  );

describe('a model pod’s runtime and puller, started together', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-beside-'));
  afterEach(() => {
    for (const c of children) if (c.pid !== undefined) process.kill(-c.pid, 'SIGKILL');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the puller marks the folder whole once pulled, idles, and ends at once when the pod stops; a failed pull ends it unmarked', async () => {
    const source = path.join(dir, 'source');
    mkdirSync(source);
    writeFileSync(path.join(source, 'model-settings.json'), '{"name":"m"}');
    const marker = path.join(dir, 'pulled');
    const dest = path.join(dir, 'dest');
    const puller = sh(PULL_THEN_IDLE, ['pull', `file://${source}`, dest], {
      TOLLGATE_CLI: CLI,
      TOLLGATE_PULLED: marker,
    });
    await until('the mark', () => existsSync(marker), 30_000);
    expect(existsSync(path.join(dest, 'model-settings.json'))).toBe(true);
    // Still running: a container that ended would be started again, and pull again.
    await new Promise((r) => setTimeout(r, 300));
    expect(puller.exitCode).toBeNull();
    // Exit 0 is its own handler's (an unhandled SIGTERM ends a process by the signal).
    puller.kill('SIGTERM');
    expect(await exited(puller)).toBe(0);

    const failedMark = path.join(dir, 'never');
    const failed = sh(PULL_THEN_IDLE, ['pull', `file://${path.join(dir, 'missing')}`, path.join(dir, 'd2')], {
      TOLLGATE_CLI: CLI,
      TOLLGATE_PULLED: failedMark,
    });
    let stderr = '';
    failed.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
    expect(await exited(failed)).not.toBe(0);
    expect(existsSync(failedMark)).toBe(false);
    expect(stderr).toContain('tollgate pull:');

    // Started again with the folder marked whole (its sandbox rebuilt): nothing is pulled over it,
    // even from a source that is gone.
    const again = sh(PULL_THEN_IDLE, ['pull', `file://${path.join(dir, 'missing')}`, dest], {
      TOLLGATE_CLI: CLI,
      TOLLGATE_PULLED: marker,
    });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(again.exitCode).toBeNull();
    expect(existsSync(path.join(dest, 'model-settings.json'))).toBe(true);
    again.kill('SIGTERM');
    expect(await exited(again)).toBe(0);
  }, 60_000);

  // The Tollgate runtime image (its launcher loads MLServer's modules while it waits) and any other
  // MLServer image (the shell waits, then runs `mlserver start`).
  for (const image of ['the Tollgate runtime image', 'a stock MLServer image'] as const) {
    it(`the runtime serves nothing before the mark and the model once it is there: ${image}`, async () => {
      const models = mkdtempSync(path.join(dir, 'models-'));
      await run(venv().python, [TRAIN, models, 'iris']);
      rmSync(path.join(models, 'expected.json'));
      const bin = mkdtempSync(path.join(dir, 'bin-'));
      const launched = path.join(bin, 'launched');
      // What the image's PATH has: MLServer's venv, and in the Tollgate image the launcher.
      if (image === 'the Tollgate runtime image') {
        writeFileSync(
          path.join(bin, 'tollgate-mlserver'),
          `#!/bin/sh\n: > "${launched}"\nexec "${venv().python}" "${LAUNCHER}" "$@"\n`,
        );
        chmodSync(path.join(bin, 'tollgate-mlserver'), 0o755);
      }
      const [http, grpc, metrics] = [await freePort(), await freePort(), await freePort()];
      const marker = path.join(dir, `pulled-${http}`);
      const start = () =>
        sh(WAIT_THEN_SERVE, [], {
          PATH: `${bin}:${path.dirname(venv().mlserver)}:${process.env.PATH ?? ''}`,
          TOLLGATE_PULLED: marker,
          MLSERVER_MODELS_DIR: models,
          MLSERVER_HOST: '127.0.0.1',
          MLSERVER_HTTP_PORT: String(http),
          MLSERVER_GRPC_PORT: String(grpc),
          MLSERVER_METRICS_PORT: String(metrics),
          MLSERVER_PARALLEL_WORKERS: '0',
          MLSERVER_LOAD_MODELS_AT_STARTUP: 'true',
          MLSERVER_METRICS_DIR: path.join(dir, `metrics-${http}`),
        });
      const ready = `http://127.0.0.1:${http}/v2/models/iris/ready`;

      // A pod stopped while it waits: it ends at once, by its own handler (a container's first
      // process would ignore an unhandled SIGTERM), not by the signal.
      const stopped = start();
      await new Promise((r) => setTimeout(r, 1_000));
      stopped.kill('SIGTERM');
      await exited(stopped);
      expect([stopped.exitCode, stopped.signalCode]).toEqual([143, null]);

      const runtime = start();
      // Long enough for MLServer to have started had it not waited.
      await new Promise((r) => setTimeout(r, 4_000));
      expect([runtime.exitCode, await status(ready)]).toEqual([null, 0]);
      expect(existsSync(launched)).toBe(image === 'the Tollgate runtime image');
      writeFileSync(marker, '');
      await until('the model ready', async () => (await status(ready)) === 200, 60_000);
      runtime.kill('SIGTERM');
      await exited(runtime);
    }, 120_000);
  }
});
