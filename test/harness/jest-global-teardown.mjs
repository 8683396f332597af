// See jest-global-setup.mjs for why this is a JavaScript shim; the implementation is
// global-teardown.ts. Setup and teardown share state through globalThis (run-state.ts), since
// each tsImport() has a module graph of its own.
import { tsImport } from 'tsx/esm/api';

export default async function jestGlobalTeardown() {
  const { globalTeardown } = await tsImport('./global-teardown.ts', import.meta.url);
  await globalTeardown();
}
