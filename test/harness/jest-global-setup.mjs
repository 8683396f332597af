// Jest loads global setup modules with require() and without its moduleNameMapper, so the
// harness's TypeScript (NodeNext `.js` specifiers) cannot be loaded the way test files are.
// tsx loads it instead; the implementation is global-setup.ts.
import { tsImport } from 'tsx/esm/api';

export default async function jestGlobalSetup() {
  const { globalSetup } = await tsImport('./global-setup.ts', import.meta.url);
  await globalSetup();
}
