// State shared between Jest's global setup and global teardown, which run in the same (parent)
// process. Workers never see it; they reach the manager through TOLLGATE_HARNESS_URL.
import type { ComponentManager } from './manager.js';

export const HARNESS_URL_ENV = 'TOLLGATE_HARNESS_URL';

export interface RunState {
  manager: ComponentManager;
  runDir: string;
  reaperPid: number | undefined;
  /** Removes the signal/exit handlers once teardown has done their job. */
  detach(): void;
}

const key = Symbol.for('tollgate.harness.run');
type WithRun = typeof globalThis & { [key]?: RunState };

export function setRunState(state: RunState | undefined): void {
  (globalThis as WithRun)[key] = state;
}

export function getRunState(): RunState | undefined {
  return (globalThis as WithRun)[key];
}
