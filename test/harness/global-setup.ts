// Jest global setup for the integration project: starts the component manager (nothing else;
// components start when a test first asks) and arranges that no process outlives the run.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentManager } from './manager.js';
import { repoRoot } from './paths.js';
import { HARNESS_URL_ENV, setRunState } from './run-state.js';

export async function globalSetup(): Promise<void> {
  const runDir = mkdtempSync(join(tmpdir(), 'tollgate-run-'));
  const manager = new ComponentManager(runDir);
  const url = await manager.listen();
  // Workers are forked after this, so they inherit it.
  process.env[HARNESS_URL_ENV] = url;

  // The reaper outlives a SIGKILLed Jest and cleans up after it.
  const reaper = spawn('bash', [join(repoRoot, 'test/harness/reaper.sh'), String(process.pid), runDir], {
    detached: true,
    stdio: 'ignore',
  });
  reaper.unref();

  const onExit = (): void => {
    manager.killAllSync();
    rmSync(runDir, { recursive: true, force: true });
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    onExit();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.on('exit', onExit);
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const s of signals) process.on(s, onSignal);

  setRunState({
    manager,
    runDir,
    reaperPid: reaper.pid,
    detach: () => {
      process.off('exit', onExit);
      for (const s of signals) process.off(s, onSignal);
    },
  });
}
