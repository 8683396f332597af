import { existsSync } from 'node:fs';
import path from 'node:path';

/** Where `make demo` keeps its state, and the file it writes while it runs (removed when it stops). */
export const DEMO_STATE_DIR = path.join('.tollgate', 'demo');
export const DEMO_ENV_FILE = path.join(DEMO_STATE_DIR, 'env');

/**
 * The standalone state directory a CLI command uses when not told: TOLLGATE_STATE_DIR, else the
 * running demo's (while `.tollgate/demo/env` exists), else `.tollgate`.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TOLLGATE_STATE_DIR) return env.TOLLGATE_STATE_DIR;
  return existsSync(DEMO_ENV_FILE) ? DEMO_STATE_DIR : '.tollgate';
}

export const STATE_DIR_HELP =
  'standalone state directory (TOLLGATE_STATE_DIR; default: the running demo’s .tollgate/demo, else .tollgate)';
