// cluster-down.sh is what leaves the machine clean after the test cluster, on a normal teardown
// and from the reaper after a killed run. Here it meets the kinds of leftovers a cluster makes
// (a process in the cluster's cgroup, a mount under its directory, its network namespace with a
// veth to the host, a route) without starting a whole cluster, and must remove every one.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { repoRoot } from '../../harness/paths.js';

const sh = (cmd: string, args: string[]): string => execFileSync(cmd, args, { encoding: 'utf8' });
/** Running: it exists and is not a zombie (this process is its parent and reaps it later). */
const running = (pid: number): boolean => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('cluster-down.sh', () => {
  it('removes the cluster processes, mounts, namespace, veth, routes, cgroups and directory', () => {
    const id = Math.random().toString(16).slice(2, 8);
    const parent = mkdtempSync(join(tmpdir(), 'tollgate-down-'));
    const dir = join(parent, 'cluster');
    const netns = `tollgate-t${id}`;
    const cgroup = `tollgate-t${id}`;
    const hostVeth = `tgh-t${id}`;
    mkdirSync(join(dir, 'containerd', 'state'), { recursive: true });
    writeFileSync(
      join(dir, 'cluster.env'),
      `NETNS=${netns}\nCGROUP=${cgroup}\nCONTAINERD_SOCK=${join(dir, 'containerd', 'containerd.sock')}\nCTR=/usr/bin/ctr\n`,
    );
    // A "container": a process moved into the cluster's cgroup.
    const victim = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
    victim.unref();
    const pid = victim.pid!;
    mkdirSync(`/sys/fs/cgroup/pids/${cgroup}/pod`, { recursive: true });
    writeFileSync(`/sys/fs/cgroup/pids/${cgroup}/pod/cgroup.procs`, String(pid));
    // A container as containerd places it: its own /k8s.io/<id> cgroup, outside the cluster's,
    // known from the task directory in containerd's state; and another machine's container,
    // which must be left alone.
    const containerId = `tgtest${id}`;
    const foreignId = `tgforeign${id}`;
    const container = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
    container.unref();
    const foreign = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
    foreign.unref();
    for (const [cid, p] of [
      [containerId, container.pid!],
      [foreignId, foreign.pid!],
    ] as const) {
      mkdirSync(`/sys/fs/cgroup/pids/k8s.io/${cid}`, { recursive: true });
      writeFileSync(`/sys/fs/cgroup/pids/k8s.io/${cid}/cgroup.procs`, String(p));
    }
    // A volume mount, the node namespace with its veth to the host, and a route through it.
    sh('mount', ['-t', 'tmpfs', 'tmpfs', join(dir, 'containerd', 'state')]);
    sh('ip', ['netns', 'add', netns]);
    sh('ip', ['link', 'add', hostVeth, 'type', 'veth', 'peer', 'name', `tgn-t${id}`]);
    sh('ip', ['link', 'set', `tgn-t${id}`, 'netns', netns]);
    sh('ip', ['addr', 'add', '10.249.255.1/30', 'dev', hostVeth]);
    sh('ip', ['link', 'set', hostVeth, 'up']);
    sh('ip', ['route', 'add', '10.249.0.0/24', 'via', '10.249.255.2', 'dev', hostVeth]);
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).toContain(dir);
    // The task directory lives in the (mounted) state directory, as containerd's does.
    mkdirSync(join(dir, 'containerd', 'state', 'io.containerd.runtime.v2.task', 'k8s.io', containerId), {
      recursive: true,
    });

    execFileSync('bash', [join(repoRoot, 'test/harness/cluster-down.sh'), dir]);

    expect(running(pid)).toBe(false);
    expect(running(container.pid!)).toBe(false);
    expect(existsSync(`/sys/fs/cgroup/pids/k8s.io/${containerId}`)).toBe(false);
    expect(running(foreign.pid!)).toBe(true);
    process.kill(foreign.pid!, 'SIGKILL');
    for (let i = 0; i < 50 && running(foreign.pid!); i++) execFileSync('sleep', ['0.1']);
    execFileSync('rmdir', [`/sys/fs/cgroup/pids/k8s.io/${foreignId}`]);
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(dir);
    expect(sh('ip', ['netns', 'list'])).not.toContain(netns);
    expect(sh('ip', ['link', 'show'])).not.toContain(hostVeth);
    expect(sh('ip', ['route', 'show'])).not.toContain('10.249.0.0/24');
    expect(existsSync(`/sys/fs/cgroup/pids/${cgroup}`)).toBe(false);
    expect(existsSync(dir)).toBe(false);
    // Idempotent: a second pass (the reaper after the teardown) finds nothing to do.
    execFileSync('bash', [join(repoRoot, 'test/harness/cluster-down.sh'), dir]);
    rmSync(parent, { recursive: true, force: true });
  });
});
