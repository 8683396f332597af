import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Redis } from 'ioredis';
import type { Result as OpenLoopResult } from './open-loop.js';

/** What the benchmarks share: their processes, readiness waits, CPU and memory readings, the open-loop runs. */
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const ROOT = join(import.meta.dirname, '..');
export const TSX = join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
export const CLI = join(ROOT, 'bin', 'tollgate.js');

const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

export function start(
  name: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  /** Each line the process writes to stdout (its JSON log), when the bench reads them. */
  onLine?: (line: string) => void,
): ChildProcess {
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', onLine ? 'pipe' : 'ignore', 'pipe'],
  });
  if (onLine && child.stdout) createInterface({ input: child.stdout }).on('line', onLine);
  let err = '';
  child.stderr?.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
  child.once('exit', (code, signal) => {
    // 143: ended by stop()'s SIGTERM through a wrapper (tsx) that exits with 128 + the signal.
    if (code !== 0 && code !== 143 && signal === null) console.error(`${name} exited with ${code}:\n${err}`);
  });
  children.push(child);
  return child;
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

/** Stops every process the benchmark started. */
export async function stopAll(): Promise<void> {
  await Promise.all(children.map((c) => stop(c)));
}

export async function waitFor(
  url: string,
  headers: Record<string, string> = {},
  want = 200,
  withinMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      const res = await fetch(url, { headers });
      await res.arrayBuffer();
      if (res.status === want) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer ${want} within ${withinMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const TICKS_PER_SECOND = 100;

/** User + system CPU seconds of a process and its children (nginx workers, cluster workers). */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    return (
      own + (children === '' ? 0 : children.split(' ').reduce((sum, c) => sum + cpuSeconds(Number(c)), 0))
    );
  } catch {
    return NaN;
  }
}

export { memoryMiB } from '../test/harness/process-memory.js';

/** A tiny upstream on loopback: 200 "hello world" to everything. */
export const UPSTREAM = `
const http = require('node:http');
http.createServer((req, res) => {
  req.resume();
  req.on('end', () => { res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '12' }); res.end('hello world\\n'); });
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

export interface FixedRate extends OpenLoopResult {
  /** CPU time of the measured process tree per request, in microseconds (Linux only). */
  cpuUsPerRequest: number;
}

/**
 * Latency at a fixed rate, in microseconds: bench/open-loop.ts in its own process, after a 2 s
 * warm-up at the same rate; the CPU of `pid` (and its children) is read over the measured part.
 */
export async function fixedRate(
  url: string,
  headers: Record<string, string>,
  rate: number,
  pid: number,
  /** Sent as a POST's body; GET without one. */
  body?: string,
): Promise<FixedRate> {
  const spec = {
    url,
    headers,
    rate,
    seconds: SECONDS,
    warmSeconds: 2,
    ...(body === undefined ? {} : { body }),
  };
  const child = spawn(process.execPath, [TSX, join(ROOT, 'bench', 'open-loop.ts'), JSON.stringify(spec)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let cpuBefore = NaN;
  let result: OpenLoopResult | undefined;
  let cpu = NaN;
  for await (const line of createInterface({ input: child.stdout })) {
    if (line === 'measuring') cpuBefore = cpuSeconds(pid);
    else {
      cpu = cpuSeconds(pid) - cpuBefore;
      result = JSON.parse(line) as OpenLoopResult;
    }
  }
  if (!result) throw new Error(`the load generator gave no result (exit ${child.exitCode})`);
  return { ...result, cpuUsPerRequest: (cpu * 1e6) / result.requests };
}

export const ms = (us: number): string => (us / 1000).toFixed(3).padStart(7);

export const fmtFixed = (f: FixedRate): string =>
  `p50 ${ms(f.p50)} ms   p90 ${ms(f.p90)} ms   p99 ${ms(f.p99)} ms   max ${ms(f.max)} ms   ` +
  `CPU ${f.cpuUsPerRequest.toFixed(0)} µs/request   (${f.requests} requests${f.bad > 0 ? `, ${f.bad} non-200/errors` : ''}; ` +
  `generator lag p99 ${ms(f.lagP99).trim()} ms)`;

/** Until a Redis just started answers (refused until redis-server listens). */
export async function waitForRedis(redis: Redis): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      await redis.ping();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error('redis did not start');
}
