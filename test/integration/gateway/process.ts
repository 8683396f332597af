import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../harness/index.js';
import { TEST_SIGNING_KEY_FILE } from '../signing.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  output: () => string;
}

/** `node bin/tollgate.js gateway` as a real separate process, ready when /healthz answers. */
export async function spawnGateway(env: Record<string, string>): Promise<GatewayProcess> {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) {
    throw new Error('dist/ is missing: run `make build` first (make test does)');
  }
  const port = await freePort();
  let output = '';
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'tollgate.js'), 'gateway'], {
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_PORT: String(port),
      // The key the tests' own index entries are sealed with.
      TOLLGATE_GRANT_SIGNING_KEY_FILE: TEST_SIGNING_KEY_FILE,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited at start:\n${output}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the gateway did not start in 20 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url, child, exited, output: () => output };
}
