import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessRegistry } from '../../harness/processes.js';

/** Members of a process group that are still running (zombies waiting to be reaped are not). */
function groupAlive(pgid: number): boolean {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // Fields after the parenthesised command name: state, ppid, pgrp, ...
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') return true;
  }
  return false;
}

describe('harness ProcessRegistry', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-proc-test-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('stops a process together with the children it started', async () => {
    const reg = new ProcessRegistry(dir);
    // The grandchild ignores SIGTERM: only the group-wide SIGKILL after the timeout ends it.
    const p = reg.spawn('tree', 'bash', ['-c', "trap '' TERM; sleep 60 & wait"], { stopTimeoutMs: 300 });
    await new Promise((r) => setTimeout(r, 100));
    expect(groupAlive(p.pid)).toBe(true);
    expect(readFileSync(join(dir, 'pgids'), 'utf8')).toBe(`${p.pid}\n`);

    await reg.stopAll();
    expect(groupAlive(p.pid)).toBe(false);
    expect(readFileSync(join(dir, 'pgids'), 'utf8')).toBe('');
  });

  it('writes each component to its own log', async () => {
    const reg = new ProcessRegistry(dir);
    const p = reg.spawn('echo', 'bash', ['-c', 'echo hello from the component']);
    await p.exited;
    expect(readFileSync(p.logFile, 'utf8')).toBe('hello from the component\n');
    await reg.stopAll();
  });

  it('says how to install a missing binary instead of failing later', () => {
    const reg = new ProcessRegistry(dir);
    expect(() => reg.spawn('x', '/nonexistent/bin/etcd', [])).toThrow(/make deps/);
  });

  it('kills everything synchronously for exit handlers', async () => {
    const reg = new ProcessRegistry(dir);
    const p = reg.spawn('sleeper', 'sleep', ['60']);
    reg.killAllSync();
    await p.exited;
    expect(groupAlive(p.pid)).toBe(false);
  });
});
