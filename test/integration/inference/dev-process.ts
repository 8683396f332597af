import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort, venv } from '../../harness/index.js';
import { ROOT } from './stack.js';

const run = promisify(execFile);
const TSX = path.join(ROOT, 'node_modules/tsx/dist/cli.mjs');
const CLI = path.join(ROOT, 'cli/main.ts');

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns a value (errors count as "not yet"). */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 180_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}

export interface Dev {
  base: string;
  /** The process serving (with `built`, the server itself, not a loader in front of it). */
  pid: number;
  /** What the process printed, the last 200 kB. */
  log(): string;
  /**
   * A key (platform by default) with these roles, created through the management API as user
   * vera, with any other field of the create call.
   */
  /** A key made by `user` (vera when not said) through the management API. */
  key(
    roles: string[],
    module?: 'platform' | 'bda',
    extra?: Record<string, unknown>,
    user?: string,
  ): Promise<string>;
  /** A management API token of user vera. */
  token(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * `tollgate dev` on a state directory, as a user runs it, until its gateway answers. `built`: the
 * built CLI (`make build`), one process whose memory a test can read, instead of the sources.
 */
export async function startDev(
  state: string,
  redisUrl: string,
  opts: { built?: boolean; env?: Record<string, string> } = {},
): Promise<Dev> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    TOLLGATE_STATE_DIR: state,
    TOLLGATE_REDIS_URL: redisUrl,
    LOG_LEVEL: 'info',
    ...opts.env,
  };
  const entry = opts.built === true ? [path.join(ROOT, 'bin/tollgate.js')] : [TSX, CLI];
  const dev: ChildProcess = spawn(
    process.execPath,
    [...entry, 'dev', '--port', String(port), '--mlserver', venv().mlserver],
    { env: opts.built === true ? { ...env, NODE_OPTIONS: '' } : env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const keep = (c: Buffer): void => void (output = (output + c.toString()).slice(-200_000));
  dev.stdout?.on('data', keep);
  dev.stderr?.on('data', keep);
  await until('the gateway', async () => ((await fetch(`${base}/readyz`)).ok ? true : undefined), 60_000);
  const tokenOf = async (user: string): Promise<string> =>
    (await run(process.execPath, [TSX, CLI, 'token', '--user', user], { env })).stdout.trim();
  const token = () => tokenOf('vera');
  return {
    base,
    pid: dev.pid ?? 0,
    log: () => output,
    token,
    async key(roles, module = 'platform', extra = {}, user = 'vera') {
      const created = await fetch(`${base}/api/v1/apikeys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await tokenOf(user)}`, 'content-type': 'application/json' },
        body: JSON.stringify({ module, roles, name: 'dev test', ...extra }),
      });
      if (created.status !== 201)
        throw new Error(`key not created: ${created.status} ${await created.text()}`);
      return ((await created.json()) as { key: string }).key;
    },
    async stop() {
      if (dev.exitCode !== null) return;
      const exited = new Promise((resolve) => dev.once('exit', resolve));
      dev.kill('SIGTERM');
      await Promise.race([exited, sleep(20_000)]);
      if (dev.exitCode === null) dev.kill('SIGKILL');
      if (process.env.TOLLGATE_TEST_VERBOSE) process.stderr.write(output);
    },
  };
}
