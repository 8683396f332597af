import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../common/logger.js';
import { freePort } from '../../common/net/free-port.js';
import { pullFolder } from '../puller/pull.js';
import { refKey, type ResourceRef } from '../framework/resource-source.js';
import type { CredentialsResolver } from '../storage/credentials.js';
import { openStore } from '../storage/open-store.js';
import type { RuntimeDriver, RuntimePlan, RuntimeState } from './runtime-driver.js';

/**
 * Standalone mode's runtime: one local `mlserver start <folder>` process per Model, on free
 * loopback ports, serving the folder pulled from the Model's storage (s3:// or file://). The
 * same contract as the Kubernetes driver: `apply` returns at once with the current state; pulling,
 * starting and becoming ready happen in the background and are reported through `onChange`, after
 * which the controller applies again and reads the new state.
 */
export interface LocalMlserverOptions {
  /** The `mlserver` executable (e.g. .venv/bin/mlserver). */
  mlserver: string;
  /** Model folders are pulled under `<workDir>/<namespace>/<name>/`. */
  workDir: string;
  credentials: CredentialsResolver;
  log: Logger;
  host?: string;
  /** MLServer's parallel inference workers; 0 serves from the main process (faster start, less memory). */
  parallelWorkers?: number;
  readyPollMs?: number;
}

interface Run {
  ref: ResourceRef;
  stamp: string;
  url: string;
  ready: boolean;
  failure?: { reason: string; message: string };
  proc?: ChildProcess;
  abort: AbortController;
  /** The last lines MLServer wrote, for the failure message. */
  tail: string[];
  /** Restarts after MLServer exited on its own; sets the delay before the next one. */
  restarts: number;
  stopped: boolean;
}

const TAIL_LINES = 12;
const STOP_GRACE_MS = 10_000;
const MAX_RESTART_DELAY_MS = 30_000;

export class LocalMlserverDriver implements RuntimeDriver {
  private readonly runs = new Map<string, Run>();
  private onChange: (ref: ResourceRef) => void = () => undefined;
  private readonly host: string;

  constructor(private readonly opts: LocalMlserverOptions) {
    this.host = opts.host ?? '127.0.0.1';
  }

  async start(onChange: (ref: ResourceRef) => void): Promise<void> {
    this.onChange = onChange;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.runs.values()].map((run) => this.halt(run)));
    this.runs.clear();
  }

  async apply(plan: RuntimePlan): Promise<RuntimeState> {
    const { metadata, spec } = plan.model;
    const ref = { namespace: metadata.namespace ?? 'default', name: metadata.name };
    const key = refKey(ref);
    if (spec.replicas === 0) {
      await this.remove(ref);
      return { replicas: 0, readyReplicas: 0, url: '', rollingOut: false };
    }
    // A new generation, storage or settings means a new folder and a new process.
    const stamp = createHash('sha256')
      .update(JSON.stringify([metadata.uid, metadata.generation, spec.storageUri, spec.env, plan.settings]))
      .digest('hex');
    let run = this.runs.get(key);
    if (run?.stamp !== stamp) {
      if (run !== undefined) await this.halt(run);
      const port = await freePort(this.host);
      run = {
        ref,
        stamp,
        url: `http://${this.host}:${port}`,
        ready: false,
        abort: new AbortController(),
        tail: [],
        restarts: 0,
        stopped: false,
      };
      this.runs.set(key, run);
      void this.launch(run, plan, port);
    }
    return {
      replicas: 1,
      readyReplicas: run.ready ? 1 : 0,
      url: run.url,
      rollingOut: !run.ready && run.failure === undefined,
      ...(run.failure === undefined ? {} : { failure: run.failure }),
    };
  }

  async remove(ref: ResourceRef): Promise<void> {
    const key = refKey(ref);
    const run = this.runs.get(key);
    if (run === undefined) return;
    this.runs.delete(key);
    await this.halt(run);
    await rm(this.folderOf(ref), { recursive: true, force: true });
  }

  private folderOf(ref: ResourceRef): string {
    return path.join(this.opts.workDir, ref.namespace, ref.name);
  }

  private fail(run: Run, reason: string, message: string): void {
    if (run.stopped) return;
    run.ready = false;
    run.failure = { reason, message };
    this.opts.log.warn({ model: refKey(run.ref), reason }, message);
    this.onChange(run.ref);
  }

  private async launch(run: Run, plan: RuntimePlan, port: number): Promise<void> {
    const { log } = this.opts;
    const { metadata, spec } = plan.model;
    const base = this.folderOf(run.ref);
    const folder = path.join(base, 'model');
    try {
      await rm(base, { recursive: true, force: true });
      await mkdir(base, { recursive: true });
      const env = await this.opts.credentials.envFor(run.ref.namespace, spec.credentials?.secretName);
      const summary = await pullFolder(openStore(spec.storageUri, env), folder, {
        signal: run.abort.signal,
        ...(plan.settingsGenerated ? { settings: JSON.stringify(plan.settings, null, 2) } : {}),
      });
      log.info({ model: metadata.name, ...summary }, 'model folder pulled');
    } catch (err) {
      this.fail(run, 'PullFailed', `could not download ${spec.storageUri}: ${(err as Error).message}`);
      return;
    }
    if (run.stopped) return;
    await this.serve(run, plan, port);
  }

  /**
   * runServer with a failure to start (no free port, an env value Node refuses, such as one
   * holding a NUL byte) reported on the Model: both callers run it in the background, where a
   * rejection would take the whole process down.
   */
  private serve(run: Run, plan: RuntimePlan, port: number): Promise<void> {
    return this.runServer(run, plan, port).catch((err: unknown) =>
      this.fail(run, 'RuntimeNotStarted', `could not start MLServer: ${(err as Error).message}`),
    );
  }

  /**
   * Runs MLServer on the pulled folder until it is ready. If it exits on its own (a crash, out of
   * memory), the failure is reported and it is started again after a growing delay, as a
   * Deployment restarts a container.
   */
  private async runServer(run: Run, plan: RuntimePlan, port: number): Promise<void> {
    const { log } = this.opts;
    const { metadata, spec } = plan.model;
    const base = this.folderOf(run.ref);
    const [grpcPort, metricsPort] = [await freePort(this.host), await freePort(this.host)];
    const extraEnv = Object.fromEntries((spec.env ?? []).map((e) => [e.name, e.value]));
    // MLServer writes .metrics and .envs under its working directory: keep them beside the folder.
    const proc = spawn(this.opts.mlserver, ['start', path.join(base, 'model')], {
      cwd: base,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ...extraEnv,
        MLSERVER_HOST: this.host,
        MLSERVER_HTTP_PORT: String(port),
        MLSERVER_GRPC_PORT: String(grpcPort),
        MLSERVER_METRICS_PORT: String(metricsPort),
        MLSERVER_PARALLEL_WORKERS: String(this.opts.parallelWorkers ?? 0),
        MLSERVER_METRICS_DIR: path.join(base, '.metrics'),
        MLSERVER_ENVIRONMENTS_DIR: path.join(base, '.envs'),
      },
    });
    run.proc = proc;
    const logFile = createWriteStream(path.join(base, 'mlserver.log'), { flags: 'a' });
    const keep = (chunk: Buffer): void => {
      logFile.write(chunk);
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() !== '') run.tail.push(line);
      }
      run.tail.splice(0, Math.max(0, run.tail.length - TAIL_LINES));
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    proc.once('error', (err) =>
      this.fail(run, 'RuntimeNotStarted', `could not run ${this.opts.mlserver}: ${err.message}`),
    );
    proc.once('exit', (code, signal) => {
      logFile.end();
      if (run.stopped) return;
      const last = run.tail.slice(-3).join(' | ');
      this.fail(run, 'RuntimeExited', `MLServer exited (${signal ?? `code ${code}`}): ${last}`);
      const delay = Math.min(MAX_RESTART_DELAY_MS, 1_000 * 2 ** run.restarts);
      run.restarts++;
      setTimeout(() => {
        if (run.stopped) return;
        run.failure = undefined;
        run.tail = [];
        this.onChange(run.ref);
        void this.serve(run, plan, port);
      }, delay).unref();
    });
    log.info({ model: metadata.name, url: run.url, pid: proc.pid }, 'MLServer starting');
    await this.waitReady(run, metadata.name);
  }

  private async waitReady(run: Run, model: string): Promise<void> {
    const poll = this.opts.readyPollMs ?? 250;
    while (!run.stopped && run.failure === undefined) {
      try {
        const res = await fetch(`${run.url}/v2/models/${model}/ready`, {
          signal: AbortSignal.timeout(2_000),
        });
        if (res.status === 200) {
          run.ready = true;
          this.opts.log.info({ model, url: run.url }, 'MLServer ready');
          this.onChange(run.ref);
          return;
        }
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, poll));
    }
  }

  private async halt(run: Run): Promise<void> {
    run.stopped = true;
    run.abort.abort();
    const proc = run.proc;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => proc.kill('SIGKILL'), STOP_GRACE_MS);
      proc.once('exit', () => {
        clearTimeout(force);
        resolve();
      });
      proc.kill('SIGTERM');
    });
  }
}
