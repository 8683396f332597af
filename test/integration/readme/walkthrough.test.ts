// The manual is tested: the runnable blocks (```sh runnable) of the README and of the docs/ pages
// it lists under "Read on" are pasted, in that order, into one bash session against a running
// `make demo`, as a newcomer would after `source .tollgate/demo/env`. Every command must succeed
// and print what the page says it prints (`# → ...` lines).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { readOnPages, runnableCommands, splitOutputs, walkthroughScript } from './runnable-blocks.js';

const run = promisify(execFile);
const ROOT = new URL('../../..', import.meta.url).pathname;
const TSX = path.join(ROOT, 'node_modules/tsx/dist/cli.mjs');
const ENV_FILE = path.join(ROOT, '.tollgate/demo/env');

let demo: ChildProcess | undefined;
let demoLog = '';

async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (demo?.exitCode !== null)
      throw new Error(`make demo exited (${demo?.exitCode}):\n${demoLog.slice(-3000)}`);
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms\n${demoLog.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

beforeAll(async () => {
  // What `make demo` runs (the Makefile target builds first; `make test` has built already).
  const env = { ...process.env };
  for (const name of ['TOLLGATE_STATE_DIR', 'TOLLGATE_REDIS_URL', 'REDIS_URL', 'DEMO_EXIT_AFTER_RUN'])
    delete env[name];
  demo = spawn(process.execPath, [TSX, path.join(ROOT, 'examples/demo.ts')], {
    cwd: ROOT,
    env,
    detached: true, // its own process group: everything it started can be stopped together
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (c: Buffer): void => void (demoLog = (demoLog + c.toString()).slice(-50_000));
  demo.stdout?.on('data', keep);
  demo.stderr?.on('data', keep);
  await until('make demo ready', () => existsSync(ENV_FILE) && demoLog.includes('Running.'), 400_000);
}, 420_000);

afterAll(async () => {
  if (demo?.pid === undefined || demo.exitCode !== null) return;
  const exited = new Promise((r) => demo?.once('exit', r));
  process.kill(-demo.pid, 'SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 60_000))]);
  if (demo.exitCode === null && demo.signalCode === null) process.kill(-demo.pid, 'SIGKILL');
}, 90_000);

test('every runnable command of the README and docs/ answers as written, against make demo', async () => {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const pages = readOnPages(readme);
  // Every page of docs/ is in the reading order (a page left out would never run).
  expect([...pages].sort()).toEqual((await readdir(path.join(ROOT, 'docs'))).map((f) => `docs/${f}`).sort());
  const commands = runnableCommands(readme, 'README.md');
  for (const page of pages)
    commands.push(...runnableCommands(await readFile(path.join(ROOT, page), 'utf8'), page));
  // The walkthrough: a first call, keys, the CLI, workflows, platform resources and models.
  expect(commands.length).toBeGreaterThanOrEqual(20);
  const script = walkthroughScript(commands, `cd '${ROOT}'\nsource .tollgate/demo/env`);
  const { stdout } = await run('bash', ['-c', script], { cwd: ROOT, timeout: 300_000, maxBuffer: 32 << 20 });
  const results = splitOutputs(stdout, commands.length);
  const failures: string[] = [];
  commands.forEach((c, i) => {
    const r = results[i];
    if (r === undefined) return failures.push(`${c.where}: never ran\n  ${c.command}`);
    if (r.status !== 0) failures.push(`${c.where}: exit ${r.status}\n  ${c.command}\n  ${r.output}`);
    for (const wanted of c.expect) {
      if (!r.output.includes(wanted))
        failures.push(`${c.where}: no "${wanted}" in the output\n  ${c.command}\n  ${r.output}`);
    }
  });
  expect(failures).toEqual([]);
}, 320_000);
