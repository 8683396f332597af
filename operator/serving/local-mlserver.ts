import { createHash } from 'node:crypto';
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../common/logger.js';
import { freePort } from '../../common/net/free-port.js';
import { RUNTIME_ANNOTATION } from '../../common/resources/labels.js';
import { pullFolder } from '../puller/pull.js';
import { refKey, type ResourceRef } from '../framework/resource-source.js';
import type { CredentialsResolver } from '../storage/credentials.js';
import { openStore } from '../storage/open-store.js';
import { MlserverProcess } from './mlserver-process.js';
import type { HeldAddress, RuntimeDriver, RuntimePlan, RuntimeState } from './runtime-driver.js';

/**
 * Standalone mode's runtime: local MLServer processes on free loopback ports, serving the folders
 * pulled from the Models' storage (s3:// or file://) into `<workDir>/<namespace>/<name>/model/`.
 * Models share one MLServer process (MLServer serves many models from one repository, here
 * `<workDir>`: each is loaded and unloaded through its repository API), which is what keeps a
 * laptop's memory in check: one process costs about 300 MiB whatever it serves. A Model gets a
 * process of its own when it sets `spec.env` (environment is per process), when its folder brings
 * Python code (`*.py` beside the model: MLServer puts a model's folder on the import path only in
 * a process of its own, and two models' modules of one name would collide), or with the
 * annotation `tollgate.dev/runtime: own` (isolation from the others' crashes). The same contract as the Kubernetes driver: `apply` returns at once with the current
 * state; pulling, starting and becoming ready happen in the background and are reported through
 * `onChange`, after which the controller applies again and reads the new state.
 */
export interface LocalMlserverOptions {
  /** The `mlserver` executable (e.g. .venv/bin/mlserver). */
  mlserver: string;
  /** Model folders are pulled under `<workDir>/<namespace>/<name>/model/`. */
  workDir: string;
  credentials: CredentialsResolver;
  log: Logger;
  host?: string;
  /** MLServer's parallel inference workers; 0 serves from the main process (faster start, less memory). */
  parallelWorkers?: number;
  readyPollMs?: number;
}

interface Run {
  /** The workload: the Model's own name, or <model>-<version>. */
  ref: ResourceRef;
  /** The Model it serves (what `onChange` reports). */
  model: ResourceRef;
  plan: RuntimePlan;
  stamp: string;
  shared: boolean;
  url: string;
  ready: boolean;
  failure?: { reason: string; message: string };
  /** The process of a Model that runs alone. */
  own?: MlserverProcess;
  /** The process serving it, its own or the shared one (for its metrics address). */
  process?: MlserverProcess;
  abort: AbortController;
  stopped: boolean;
}

/**
 * Whether a Model may run in the shared process, before its folder is seen (see the class
 * comment). A version never does: MLServer loads and unloads every version of a name at once.
 */
export function mayShareRuntime(plan: RuntimePlan): boolean {
  const { metadata, spec } = plan.model;
  return (
    plan.version === undefined &&
    (spec.env ?? []).length === 0 &&
    metadata.annotations?.[RUNTIME_ANNOTATION] !== 'own'
  );
}

async function bringsPythonCode(folder: string): Promise<boolean> {
  return (await readdir(folder)).some((f) => f.endsWith('.py'));
}

export class LocalMlserverDriver implements RuntimeDriver {
  private readonly runs = new Map<string, Run>();
  private onChange: (ref: ResourceRef) => void = () => undefined;
  private readonly host: string;
  /** The shared process, started with the first shared Model and stopped after the last. */
  private shared: Promise<MlserverProcess> | undefined;

  constructor(private readonly opts: LocalMlserverOptions) {
    this.host = opts.host ?? '127.0.0.1';
  }

  async start(onChange: (ref: ResourceRef) => void): Promise<void> {
    this.onChange = onChange;
  }

  async stop(): Promise<void> {
    // The shared process goes as a whole: no model needs unloading first.
    await Promise.all([...this.runs.values()].map((run) => this.halt(run, false)));
    this.runs.clear();
    await this.stopShared();
  }

  async apply(plan: RuntimePlan): Promise<RuntimeState> {
    const { metadata, spec } = plan.model;
    const model = { namespace: metadata.namespace ?? 'default', name: metadata.name };
    const ref = { namespace: model.namespace, name: plan.workload };
    const key = refKey(ref);
    if (plan.replicas === 0) {
      await this.remove(ref, model.name);
      return { replicas: 0, readyReplicas: 0, url: '', rollingOut: false };
    }
    // New storage, credentials, settings, environment or placement mean a new folder (and load or
    // process); an edit of anything else (the traffic split, the workflow) leaves the run as it is.
    const stamp = createHash('sha256')
      .update(
        JSON.stringify([
          metadata.uid,
          plan.storageUri,
          spec.credentials?.secretName,
          spec.env,
          plan.settings,
          mayShareRuntime(plan),
        ]),
      )
      .digest('hex');
    let run = this.runs.get(key);
    if (run?.stamp !== stamp) {
      if (run !== undefined) await this.halt(run);
      run = {
        ref,
        model,
        plan,
        stamp,
        shared: false,
        url: '',
        ready: false,
        abort: new AbortController(),
        stopped: false,
      };
      this.runs.set(key, run);
      void this.launch(run);
    }
    return {
      replicas: 1,
      readyReplicas: run.ready ? 1 : 0,
      url: run.url,
      ...(run.process?.metricsUrl === undefined ? {} : { metricsUrl: run.process.metricsUrl }),
      ...(run.process?.grpcAddress === undefined ? {} : { grpcAddress: run.process.grpcAddress }),
      rollingOut: !run.ready && run.failure === undefined,
      ...(run.failure === undefined ? {} : { failure: run.failure }),
    };
  }

  /** A local process's port is this machine's, handed out by no one to a team: nothing is held. */
  held(): HeldAddress[] {
    return [];
  }

  release(): Promise<void> {
    return Promise.resolve();
  }

  workloads(model: ResourceRef): string[] {
    return [...this.runs.values()]
      .filter((r) => r.model.namespace === model.namespace && r.model.name === model.name)
      .map((r) => r.ref.name);
  }

  async remove(ref: ResourceRef, model: string): Promise<void> {
    const key = refKey(ref);
    const run = this.runs.get(key);
    if (run === undefined || run.model.name !== model) return;
    this.runs.delete(key);
    await this.halt(run);
    await rm(this.baseOf(run), { recursive: true, force: true });
    if (run.shared && ![...this.runs.values()].some((r) => r.shared)) await this.stopShared();
  }

  /** `<workDir>/<ns>/<name>/`: the model's folder `model/`, and its own process's log. */
  private baseOf(run: Run): string {
    return path.join(this.opts.workDir, run.ref.namespace, run.ref.name);
  }

  private fail(run: Run, reason: string, message: string): void {
    if (run.stopped) return;
    run.ready = false;
    run.failure = { reason, message };
    this.opts.log.warn({ model: refKey(run.ref), reason }, message);
    this.onChange(run.model);
  }

  /** Pulls the Model's folder to `folder`; false (and the Model failed) if it could not. */
  private async pull(run: Run, folder: string): Promise<boolean> {
    const { spec, metadata } = run.plan.model;
    const uri = run.plan.storageUri;
    try {
      await rm(folder, { recursive: true, force: true });
      await mkdir(folder, { recursive: true });
      const env = await this.opts.credentials.envFor(run.ref.namespace, spec.credentials?.secretName, uri);
      const summary = await pullFolder(openStore(uri, env), folder, {
        signal: run.abort.signal,
        ...(run.plan.settingsGenerated ? { settings: JSON.stringify(run.plan.settings, null, 2) } : {}),
      });
      this.opts.log.info(
        { model: metadata.name, version: run.plan.version, ...summary },
        'model folder pulled',
      );
      return !run.stopped;
    } catch (err) {
      this.fail(run, 'PullFailed', `could not download ${uri}: ${(err as Error).message}`);
      return false;
    }
  }

  /** Pulls the folder, then loads it into the shared process or starts a process of its own. */
  private async launch(run: Run): Promise<void> {
    const folder = path.join(this.baseOf(run), 'model');
    if (!(await this.pull(run, folder))) return;
    try {
      run.shared = mayShareRuntime(run.plan) && !(await bringsPythonCode(folder));
      if (run.shared) {
        run.process = await this.sharedProcess();
        run.url = run.process.url;
        await this.load(run);
      } else {
        const port = await freePort(this.host);
        run.url = `http://${this.host}:${port}`;
        await this.startOwn(run, folder, port);
      }
    } catch (err) {
      this.fail(run, 'RuntimeNotStarted', `could not start MLServer: ${(err as Error).message}`);
    }
  }

  private async startOwn(run: Run, folder: string, port: number): Promise<void> {
    const base = this.baseOf(run);
    const extraEnv = Object.fromEntries((run.plan.model.spec.env ?? []).map((e) => [e.name, e.value]));
    const own = new MlserverProcess({
      mlserver: this.opts.mlserver,
      host: this.host,
      port,
      folder,
      cwd: base,
      env: { ...process.env, ...extraEnv },
      parallelWorkers: this.opts.parallelWorkers ?? 0,
      log: this.opts.log,
      name: run.ref.name,
      onExit: (message) => this.fail(run, 'RuntimeExited', message),
      onRestart: () => {
        if (run.stopped) return;
        run.url = own.url;
        run.failure = undefined;
        this.onChange(run.model);
        void this.waitReady(run);
      },
      onSpawnFailed: (message) => this.fail(run, 'RuntimeNotStarted', message),
    });
    run.own = own;
    run.process = own;
    await own.start();
    await this.waitReady(run);
  }

  /** The shared process, started on first use. */
  private sharedProcess(): Promise<MlserverProcess> {
    this.shared ??= (async () => {
      // The repository is the work directory: MLServer finds each model-settings.json under it.
      const root = this.opts.workDir;
      const cwd = path.join(root, '.shared');
      await mkdir(cwd, { recursive: true });
      const shared = new MlserverProcess({
        mlserver: this.opts.mlserver,
        host: this.host,
        port: await freePort(this.host),
        folder: root,
        cwd,
        // Models are loaded one by one through the repository API, as they become ready to serve.
        env: {
          ...process.env,
          MLSERVER_LOAD_MODELS_AT_STARTUP: 'false',
          MLSERVER_MODEL_REPOSITORY_ROOT: root,
        },
        parallelWorkers: this.opts.parallelWorkers ?? 0,
        log: this.opts.log,
        name: 'shared',
        onExit: (message) => {
          for (const run of this.sharedRuns()) this.fail(run, 'RuntimeExited', message);
        },
        // A restarted process has lost its models: load them again.
        onRestart: () => {
          for (const run of this.sharedRuns()) {
            run.url = shared.url;
            run.failure = undefined;
            this.onChange(run.model);
            void this.load(run);
          }
        },
        onSpawnFailed: (message) => {
          for (const run of this.sharedRuns()) this.fail(run, 'RuntimeNotStarted', message);
        },
      });
      await shared.start();
      return shared;
    })();
    // A start that failed (no free port, no work directory) is not kept: the next Model tries again.
    const starting = this.shared;
    starting.catch(() => {
      if (this.shared === starting) this.shared = undefined;
    });
    return starting;
  }

  private sharedRuns(): Run[] {
    return [...this.runs.values()].filter((r) => r.shared && !r.stopped);
  }

  private async stopShared(): Promise<void> {
    const shared = this.shared;
    this.shared = undefined;
    if (shared !== undefined) await (await shared).stop();
  }

  /** Loads the Model into the shared process once it answers, then waits for it to be ready. */
  private async load(run: Run): Promise<void> {
    const name = run.model.name;
    const poll = this.opts.readyPollMs ?? 250;
    while (!run.stopped && run.failure === undefined) {
      let res: Response;
      try {
        res = await fetch(`${run.url}/v2/repository/models/${name}/load`, {
          method: 'POST',
          signal: AbortSignal.timeout(120_000),
        });
      } catch {
        await new Promise((resolve) => setTimeout(resolve, poll)); // not listening yet
        // The shared process may have been stopped meanwhile (its last other Model removed): a
        // new one is started for this Model.
        run.url = (await this.sharedProcess()).url;
        continue;
      }
      if (res.ok) return this.waitReady(run);
      const text = await res.text();
      let detail = text;
      try {
        detail = (JSON.parse(text) as { error?: string }).error ?? text;
      } catch {
        // not JSON: the text as it is
      }
      return this.fail(run, 'ModelLoadFailed', `MLServer could not load ${name}: ${detail.slice(0, 2000)}`);
    }
  }

  private async unload(run: Run): Promise<void> {
    try {
      const res = await fetch(`${run.url}/v2/repository/models/${run.model.name}/unload`, {
        method: 'POST',
        signal: AbortSignal.timeout(30_000),
      });
      await res.body?.cancel();
    } catch {
      // the shared process is gone or restarting: nothing is loaded there
    }
  }

  private async waitReady(run: Run): Promise<void> {
    const model = run.model.name;
    const poll = this.opts.readyPollMs ?? 250;
    while (!run.stopped && run.failure === undefined) {
      try {
        const res = await fetch(`${run.url}/v2/models/${model}/ready`, {
          signal: AbortSignal.timeout(2_000),
        });
        if (res.status === 200) {
          run.ready = true;
          this.opts.log.info({ model, url: run.url, shared: run.shared }, 'MLServer ready');
          this.onChange(run.model);
          return;
        }
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, poll));
    }
  }

  private async halt(run: Run, unload = true): Promise<void> {
    run.stopped = true;
    run.abort.abort();
    if (run.shared && unload) await this.unload(run);
    await run.own?.stop();
  }
}
