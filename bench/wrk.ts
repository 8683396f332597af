import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { cpuSeconds, SECONDS } from './support.js';

const exec = promisify(execFile);

export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

export interface Figures {
  rps: number;
  /** Requests answered in the run. */
  requests: number;
  p50: number;
  p99: number;
  bad: number;
  /** CPU time of the target's process tree per request, in microseconds. */
  cpuUs: number;
}

/** wrk's `50%    1.23ms` latency lines, in milliseconds. */
function wrkLatency(text: string, pct: string): number {
  const m = new RegExp(`^\\s*${pct}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(text);
  if (m === null) return NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

/**
 * Saturating load (closed loop, CONNECTIONS connections) from wrk, a C load generator on one
 * thread: the target, not the generator, sets the ceiling. CPU per request is the target's process
 * tree over the run.
 */
export async function load(url: string, headers: Record<string, string>, pid: number): Promise<Figures> {
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '--latency'];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  const cpuBefore = cpuSeconds(pid);
  const { stdout } = await exec('wrk', [...args, url], { maxBuffer: 1 << 20 });
  const cpu = cpuSeconds(pid) - cpuBefore;
  const total = Number(/^\s*(\d+) requests in/m.exec(stdout)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? NaN),
    requests: total,
    p50: wrkLatency(stdout, '50'),
    p99: wrkLatency(stdout, '99'),
    bad: non2xx + (socketErrors === null ? 0 : socketErrors.slice(1).reduce((n, v) => n + Number(v), 0)),
    cpuUs: (cpu / total) * 1e6,
  };
}

/** An unmeasured 2 s of the same load first: connections opened, caches filled, code compiled. */
export async function warmUp(url: string, headers: Record<string, string>): Promise<void> {
  const args = ['-t1', `-c${CONNECTIONS}`, '-d2s'];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  await exec('wrk', [...args, url]);
}
