// A local runtime's port is found free, then bound by MLServer seconds later (its imports take
// that long): on a busy machine another process may bind it first, a client's ephemeral port, and
// keep it. The runtime must move, not be refused the same port on every restart. Real MLServer.
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../../common/net/free-port.js';
import { createLogger } from '../../../common/logger.js';
import { MlserverProcess } from '../../../operator/serving/mlserver-process.js';
import { venv } from '../../harness/index.js';
import { trainExamples } from './stack.js';

let models: string;
let cwd: string;
let squatter: Server;

beforeAll(async () => {
  models = await trainExamples(['iris']);
  cwd = await mkdtemp(path.join(tmpdir(), 'tollgate-port-taken-'));
});

afterAll(async () => {
  await new Promise((resolve) => squatter?.close(resolve));
  await rm(models, { recursive: true, force: true });
  await rm(cwd, { recursive: true, force: true });
});

test('a runtime whose port another process took restarts on a port of its own and answers', async () => {
  const port = await freePort('127.0.0.1');
  squatter = createServer();
  await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
  const exits: string[] = [];
  let restarted!: () => void;
  const restart = new Promise<void>((resolve) => (restarted = resolve));
  const runtime = new MlserverProcess({
    mlserver: venv().mlserver,
    host: '127.0.0.1',
    port,
    folder: path.join(models, 'model-iris'),
    cwd,
    env: { ...process.env },
    parallelWorkers: 0,
    log: createLogger('port-taken-test', 'silent'),
    name: 'model-iris',
    onExit: (message) => exits.push(message),
    onRestart: () => restarted(),
    onSpawnFailed: (message) => exits.push(message),
  });
  try {
    await runtime.start();
    await restart;
    expect(exits[0]).toMatch(/MLServer exited \(code 3\)/);
    expect(runtime.url).not.toBe(`http://127.0.0.1:${port}`);
    let ready = false;
    for (let i = 0; i < 120 && !ready; i++) {
      ready = await fetch(`${runtime.url}/v2/models/model-iris/ready`)
        .then((r) => r.status === 200)
        .catch(() => false);
      if (!ready) await new Promise((r) => setTimeout(r, 500));
    }
    expect(ready).toBe(true);
  } finally {
    await runtime.stop();
  }
}, 120_000);
