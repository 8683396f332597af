import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { repoRoot } from '../../harness/paths.js';

// The reaper is what cleans up after a Jest parent killed with SIGKILL; here a `sleep` stands in
// for that parent.
describe('harness reaper', () => {
  it('kills the listed process groups and deletes the run dir once the parent is gone', async () => {
    const runDir = mkdtempSync(join(tmpdir(), 'tollgate-reaper-test-'));
    const parent = spawn('sleep', ['60'], { stdio: 'ignore' });
    const component = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
    const componentExit = new Promise((r) => component.once('exit', r));
    writeFileSync(join(runDir, 'pgids'), `${component.pid}\n`);
    const reaper = spawn('bash', [join(repoRoot, 'test/harness/reaper.sh'), String(parent.pid), runDir], {
      stdio: 'ignore',
    });
    const reaperExit = new Promise((r) => reaper.once('exit', r));

    parent.kill('SIGKILL');
    await componentExit;
    await reaperExit;
    expect(existsSync(runDir)).toBe(false);
  });

  it('exits quietly when the run dir is removed by a normal teardown', async () => {
    const runDir = mkdtempSync(join(tmpdir(), 'tollgate-reaper-test-'));
    const reaper = spawn('bash', [join(repoRoot, 'test/harness/reaper.sh'), String(process.pid), runDir], {
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((r) => reaper.once('exit', r));
    await sleep(200);
    const { rmSync } = await import('node:fs');
    rmSync(runDir, { recursive: true });
    expect(await exited).toBe(0);
  });
});
