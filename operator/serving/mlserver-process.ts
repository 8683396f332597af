import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../common/logger.js';
import { freePort } from '../../common/net/free-port.js';

/**
 * One local `mlserver start <folder>` process on free loopback ports, supervised as a kubelet
 * supervises a container: if it exits on its own (a crash, out of memory) the owner is told, and
 * it is started again after a growing delay. Its output goes to `<cwd>/mlserver.log`; the last
 * lines are kept for failure messages.
 */
export interface MlserverProcessOptions {
  mlserver: string;
  host: string;
  port: number;
  /** The folder MLServer serves: one model's, or a repository of several. */
  folder: string;
  /** Working directory: MLServer writes .metrics and .envs under it, and the log goes here. */
  cwd: string;
  env: NodeJS.ProcessEnv;
  parallelWorkers: number;
  log: Logger;
  /** For logs. */
  name: string;
  /** Called when the process exited on its own, with what it last said. */
  onExit(message: string): void;
  /** Called when a restarted process has been spawned. */
  onRestart(): void;
  /** Called when a (re)start fails before the process exists (e.g. an env value Node refuses). */
  onSpawnFailed(message: string): void;
}

const TAIL_LINES = 12;
const STOP_GRACE_MS = 10_000;
const MAX_RESTART_DELAY_MS = 30_000;

/** What uvicorn says when its port was taken between our finding it free and its binding it. */
const PORT_TAKEN = /address already in use/i;

export class MlserverProcess {
  /** Where it answers: a restart after its port was taken meanwhile moves it to another. */
  url: string;
  /** MLServer's own Prometheus metrics, once spawned (a new port on each restart). */
  metricsUrl: string | undefined;
  /** Its own gRPC service (host:port), once spawned (a new port on each restart). */
  grpcAddress: string | undefined;
  private proc: ChildProcess | undefined;
  private tail: string[] = [];
  private restarts = 0;
  private stopped = false;

  private port: number;

  constructor(private readonly opts: MlserverProcessOptions) {
    this.port = opts.port;
    this.url = `http://${opts.host}:${opts.port}`;
  }

  /** Spawns the process; a spawn that fails is reported through onSpawnFailed, never thrown. */
  async start(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.spawnOnce();
    } catch (err) {
      this.opts.onSpawnFailed(`could not start MLServer: ${(err as Error).message}`);
    }
  }

  private async spawnOnce(): Promise<void> {
    const { opts } = this;
    const [grpcPort, metricsPort] = [await freePort(opts.host), await freePort(opts.host)];
    // Stopped while the ports were found: never spawn a process nobody will stop.
    if (this.stopped) return;
    this.metricsUrl = `http://${opts.host}:${metricsPort}/metrics`;
    this.grpcAddress = `${opts.host}:${grpcPort}`;
    const proc = spawn(opts.mlserver, ['start', opts.folder], {
      cwd: opts.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...opts.env,
        MLSERVER_HOST: opts.host,
        MLSERVER_HTTP_PORT: String(this.port),
        MLSERVER_GRPC_PORT: String(grpcPort),
        MLSERVER_METRICS_PORT: String(metricsPort),
        MLSERVER_PARALLEL_WORKERS: String(opts.parallelWorkers),
        MLSERVER_METRICS_DIR: path.join(opts.cwd, '.metrics'),
        MLSERVER_ENVIRONMENTS_DIR: path.join(opts.cwd, '.envs'),
      },
    });
    this.proc = proc;
    const logFile = createWriteStream(path.join(opts.cwd, 'mlserver.log'), { flags: 'a' });
    let portTaken = false;
    const keep = (chunk: Buffer): void => {
      logFile.write(chunk);
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() !== '') this.tail.push(line);
        if (PORT_TAKEN.test(line)) portTaken = true;
      }
      this.tail.splice(0, Math.max(0, this.tail.length - TAIL_LINES));
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    proc.once('error', (err) => opts.onSpawnFailed(`could not run ${opts.mlserver}: ${err.message}`));
    proc.once('exit', (code, signal) => {
      logFile.end();
      if (this.stopped) return;
      opts.onExit(`MLServer exited (${signal ?? `code ${code}`}): ${this.tail.slice(-3).join(' | ')}`);
      const delay = Math.min(MAX_RESTART_DELAY_MS, 1_000 * 2 ** this.restarts);
      this.restarts++;
      // A port found free is free only until another process binds it (a client's ephemeral
      // port, on a busy machine): the same port would be refused on every restart.
      setTimeout(() => {
        if (this.stopped) return;
        this.tail = [];
        const next = portTaken
          ? freePort(opts.host).then((port) => {
              this.port = port;
              this.url = `http://${opts.host}:${port}`;
            })
          : Promise.resolve();
        next
          .then(() => this.spawnOnce())
          .then(
            () => opts.onRestart(),
            (err: unknown) => opts.onSpawnFailed(`could not start MLServer: ${(err as Error).message}`),
          );
      }, delay).unref();
    });
    opts.log.info({ runtime: opts.name, url: this.url, pid: proc.pid }, 'MLServer starting');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const proc = this.proc;
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
