import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../common/net/free-port.js';
import { cpuBreakdown, STARTUP } from './cpu-breakdown.js';
import { CLI, start, stop, waitFor } from './support.js';
import { load } from './wrk.js';

/**
 * Where a call's CPU goes: one more gateway process, run under V8's sampling profiler
 * (`--cpu-prof`), saturated by wrk as the measured runs are; each part's share of its busy time
 * and its microseconds per call (the start's module loading set apart). The profiler adds its own
 * cost, so these figures are for the split, not for the throughput.
 */
export async function profiledCalls(
  dir: string,
  env: NodeJS.ProcessEnv,
  path: string,
  headers: Record<string, string>,
): Promise<string[]> {
  const port = await freePort();
  const profiles = join(dir, `profile-${port}`);
  mkdirSync(profiles, { recursive: true });
  const proc = start(
    'gateway, profiled',
    process.execPath,
    ['--cpu-prof', `--cpu-prof-dir=${profiles}`, CLI, 'gateway', '--workers', '1'],
    { ...env, TOLLGATE_PORT: String(port) },
  );
  const url = `http://127.0.0.1:${port}${path}`;
  await waitFor(url, headers);
  const figures = await load(url, headers, proc.pid as number);
  // The profile is written as the process exits.
  await stop(proc);
  const file = readdirSync(profiles).find((f) => f.endsWith('.cpuprofile'));
  if (file === undefined) return ['  (no profile was written)'];
  const { busyUs, parts } = cpuBreakdown(join(profiles, file));
  const startup = parts.find((p) => p.part === STARTUP)?.us ?? 0;
  const calls = busyUs - startup;
  const lines = [
    `  ${figures.requests} calls, ${(calls / figures.requests).toFixed(1)} µs of CPU each on the event loop (under the profiler):`,
  ];
  for (const { part, us } of parts) {
    if (part === STARTUP) continue;
    lines.push(
      `    ${part.padEnd(48)} ${((us / calls) * 100).toFixed(1).padStart(5)}%   ${(us / figures.requests).toFixed(2).padStart(6)} µs/call`,
    );
  }
  return lines;
}
