// Starts component processes, each in its own process group, and guarantees they end with the
// run: stopAll() on a normal teardown, killAllSync() from exit/signal handlers, and the reaper
// (reaper.sh) reads the pgids file when the Jest parent itself was killed outright. Components
// that leave more than processes behind (the test cluster) register a cleanup script too.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Managed {
  name: string;
  pid: number;
  logFile: string;
  /** Resolves with the exit code (null when killed by a signal) once the process has ended. */
  exited: Promise<number | null>;
  hasExited(): boolean;
  stop(): Promise<void>;
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** How long a SIGTERM may take before the group gets SIGKILL. */
  stopTimeoutMs?: number;
  /** Storage others depend on (etcd): stopped only after every other process has ended. */
  stopLast?: boolean;
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the whole group is already gone, which is what we want.
  }
}

export class ProcessRegistry {
  private readonly live = new Map<number, Managed>();
  private readonly last = new Set<number>();
  private readonly cleanups = new Map<string, { script: string; args: string[] }>();
  private readonly pgidsFile: string;
  private readonly cleanupsFile: string;

  constructor(private readonly runDir: string) {
    this.pgidsFile = join(runDir, 'pgids');
    this.cleanupsFile = join(runDir, 'cleanups');
    writeFileSync(this.pgidsFile, '');
    writeFileSync(this.cleanupsFile, '');
  }

  /**
   * A script that removes what a component leaves beyond its processes (containers, mounts, a
   * network namespace). It runs after the processes are stopped, from stopAll, from
   * killAllSync, and from the reaper (listed in <run-dir>/cleanups), so it must be idempotent.
   */
  addCleanup(name: string, script: string, args: string[]): void {
    this.cleanups.set(name, { script, args });
    writeFileSync(
      this.cleanupsFile,
      [...this.cleanups.values()].map((c) => `${[c.script, ...c.args].join(' ')}\n`).join(''),
    );
  }

  private runCleanupsSync(): void {
    for (const { script, args } of this.cleanups.values()) {
      try {
        execFileSync('bash', [script, ...args], { stdio: 'ignore', timeout: 120_000 });
      } catch {
        // The reaper will try again; nothing else can be done from here.
      }
    }
  }

  spawn(name: string, command: string, args: string[], opts: SpawnOptions = {}): Managed {
    if (command.includes('/') && !existsSync(command)) {
      throw new Error(`${command} is not installed: run \`make deps\` (bash test/harness/install.sh all)`);
    }
    const logFile = join(this.runDir, `${name}.log`);
    const fd = openSync(logFile, 'a');
    const child = spawn(command, args, {
      // detached => setsid(): the component and all its children share a group we can kill.
      detached: true,
      stdio: ['ignore', fd, fd],
      env: opts.env ?? process.env,
      cwd: opts.cwd ?? this.runDir,
    });
    closeSync(fd);
    let done = false;
    let spawnError: Error | undefined;
    const exited = new Promise<number | null>((resolveExit) => {
      child.once('exit', (code) => {
        done = true;
        resolveExit(code);
      });
      // Listened to before anything can throw, so a failed spawn never becomes an uncaught error.
      child.once('error', (err) => {
        spawnError = err;
        done = true;
        resolveExit(-1);
      });
    });
    if (child.pid === undefined) {
      throw new Error(`could not start ${command}: ${spawnError?.message ?? 'no pid'}`);
    }
    const pid = child.pid;
    // The parent must not wait for components to exit on its own.
    child.unref();
    const stopTimeoutMs = opts.stopTimeoutMs ?? 10_000;
    const managed: Managed = {
      name,
      pid,
      logFile,
      exited,
      hasExited: () => done,
      stop: async () => {
        // Unreferenced, a child would let Node exit before its exit event arrives, and
        // teardown would end half-way; while stopping, it must hold the event loop open.
        child.ref();
        killGroup(pid, 'SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, stopTimeoutMs)))]);
        clearTimeout(timer);
        // Also reaps helpers the leader left behind in its group.
        killGroup(pid, 'SIGKILL');
        await exited;
        this.live.delete(pid);
        this.writePgids();
      },
    };
    this.live.set(pid, managed);
    if (opts.stopLast === true) this.last.add(pid);
    this.writePgids();
    return managed;
  }

  async stopAll(): Promise<void> {
    const all = [...this.live.values()];
    await Promise.all(all.filter((m) => !this.last.has(m.pid)).map((m) => m.stop()));
    await Promise.all(all.filter((m) => this.last.has(m.pid)).map((m) => m.stop()));
    await Promise.all(
      [...this.cleanups.values()].map(
        ({ script, args }) =>
          new Promise<void>((done) =>
            execFile('bash', [script, ...args], { timeout: 120_000 }, () => done()),
          ),
      ),
    );
    this.cleanups.clear();
    writeFileSync(this.cleanupsFile, '');
  }

  /** For exit handlers, where nothing asynchronous can run any more. */
  killAllSync(): void {
    for (const pid of this.live.keys()) killGroup(pid, 'SIGKILL');
    this.live.clear();
    this.runCleanupsSync();
    this.cleanups.clear();
  }

  private writePgids(): void {
    writeFileSync(this.pgidsFile, [...this.live.keys()].map((p) => `${p}\n`).join(''));
  }
}

/** The last lines of a component's log, for error messages that say why it did not start. */
export function logTail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
