import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { openApiDocument } from '../../gateway/api/openapi.js';

/**
 * `tsx tools/codegen/panel-types.ts [--check]`: writes the panel's API types
 * (panel/types/js/api-types.d.ts) from the OpenAPI document the gateway serves, so the
 * panel's JSDoc types are the contract's and the panel still needs no build step. With --check it
 * writes nothing and fails when the file is stale (a unit test runs the same comparison).
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const PANEL_TYPES = path.join(root, 'panel/types/js/api-types.d.ts');

const HEADER = [
  "// Generated from the management API's OpenAPI document (gateway/api/openapi.ts) by",
  "// tools/codegen/panel-types.ts. Do not edit: change a route's schemas and run `npm run codegen`.",
  '',
].join('\n');

export async function panelTypes(): Promise<string> {
  // The grace limit does not change a type's shape; any value gives the same types.
  const document = openApiDocument({ maxRollGraceSeconds: 86_400, version: '0.0.0' });
  const ast = await openapiTS(JSON.stringify(document), { alphabetize: true });
  return HEADER + astToString(ast);
}

async function main(): Promise<void> {
  const text = await panelTypes();
  if (process.argv.includes('--check')) {
    const current = await readFile(PANEL_TYPES, 'utf8').catch(() => '');
    if (current !== text) {
      process.stderr.write(`${PANEL_TYPES} is stale: run npm run codegen\n`);
      process.exit(1);
    }
    return;
  }
  await writeFile(PANEL_TYPES, text);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
