// Jest global teardown: stops every component (SIGTERM, then SIGKILL to each process group) and
// deletes the run's temp dir. TOLLGATE_KEEP_RUN_DIR=1 keeps the dir, with each component's log.
import { rmSync } from 'node:fs';
import { getRunState, setRunState } from './run-state.js';

export async function globalTeardown(): Promise<void> {
  const state = getRunState();
  if (state === undefined) return;
  await state.manager.shutdown();
  if (process.env['TOLLGATE_KEEP_RUN_DIR'] === '1') {
    process.stderr.write(`harness: component logs kept in ${state.runDir}\n`);
  } else {
    rmSync(state.runDir, { recursive: true, force: true });
  }
  if (state.reaperPid !== undefined) {
    try {
      process.kill(state.reaperPid);
    } catch {
      // Already gone.
    }
  }
  state.detach();
  setRunState(undefined);
}
