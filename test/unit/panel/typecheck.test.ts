// The panel's browser scripts are plain JavaScript served as they are, type-checked from their
// JSDoc by tsconfig.panel.json (strict, DOM types). A type error there fails the tests, not a user.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from '@jest/globals';
import { repoRoot } from '../../harness/paths.js';

const run = promisify(execFile);

describe('panel scripts', () => {
  it('type-check under strict TypeScript with the DOM types', async () => {
    const tsc = join(repoRoot, 'node_modules/typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', join(repoRoot, 'tsconfig.panel.json')]).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
    );
    expect(result.stdout).toBe('');
    expect(result.code).toBe(0);
  }, 60_000);
});
