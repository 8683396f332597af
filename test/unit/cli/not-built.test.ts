import { execFile } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BIN = new URL('../../../bin', import.meta.url).pathname;

it('the CLI before a build says to run make build, with no stack trace', async () => {
  const clone = await mkdtemp(join(tmpdir(), 'tollgate-unbuilt-'));
  try {
    await cp(BIN, join(clone, 'bin'), { recursive: true });
    const failed = await run(process.execPath, [join(clone, 'bin', 'tollgate.js'), '--help']).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toBe(
      'tollgate: the CLI is not built yet; run `make build` (or `make demo`) in the repository first\n',
    );
  } finally {
    await rm(clone, { recursive: true, force: true });
  }
});
