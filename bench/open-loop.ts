import http from 'node:http';
import { z } from 'zod';

/**
 * An open-loop load generator, run as its own process so it never shares an event loop (or a JIT
 * pause) with what it measures: requests leave on a fixed schedule whatever the answers do, over
 * kept-alive node:http connections, each timed with the monotonic clock in nanoseconds from the
 * moment it is handed to the agent (so a queued request counts its wait) to the last byte of the
 * answer. autocannon reports fixed-rate latencies in whole milliseconds; this reports microseconds.
 *
 * Input: one JSON argument (see Spec). Output on stdout: the line `measuring` when the warm-up is
 * over (the parent reads the CPU of the measured process tree there), then one JSON line (Result).
 */
const Spec = z.object({
  url: z.url(),
  headers: z.record(z.string(), z.string()),
  rate: z.number().positive(),
  seconds: z.number().positive(),
  warmSeconds: z.number().nonnegative(),
  /** A POST's body (GET without one). */
  body: z.string().optional(),
});

export interface Result {
  requests: number;
  /** Answers other than 200, and transport errors. */
  bad: number;
  /** Latency percentiles in microseconds. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** How late the generator itself sent, at p99, in microseconds: large values discredit the run. */
  lagP99: number;
}

const spec = Spec.parse(JSON.parse(process.argv[2] ?? ''));
const target = new URL(spec.url);
const agent = new http.Agent({ keepAlive: true });

function once(): Promise<{ us: number; ok: boolean }> {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const elapsed = () => Number(process.hrtime.bigint() - started) / 1000;
    const req = http.request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        headers: spec.headers,
        method: spec.body === undefined ? 'GET' : 'POST',
      },
      (res) => {
        res.on('error', () => resolve({ us: elapsed(), ok: false }));
        res.on('end', () => resolve({ us: elapsed(), ok: res.statusCode === 200 }));
        res.resume();
      },
    );
    req.on('error', () => resolve({ us: elapsed(), ok: false }));
    req.end(spec.body);
  });
}

/** Sends `rate * seconds` requests on schedule; resolves when every answer is in. */
async function phase(seconds: number): Promise<{ latencies: Float64Array; bad: number; lags: Float64Array }> {
  const total = Math.round(spec.rate * seconds);
  const intervalNs = 1e9 / spec.rate;
  const lags = new Float64Array(total);
  const answers: Array<Promise<{ us: number; ok: boolean }>> = [];
  const t0 = process.hrtime.bigint();
  await new Promise<void>((done) => {
    const tick = () => {
      const now = Number(process.hrtime.bigint() - t0);
      for (; answers.length < total && answers.length * intervalNs <= now;) {
        lags[answers.length] = (now - answers.length * intervalNs) / 1000;
        answers.push(once());
      }
      if (answers.length === total) return done();
      // Timers have millisecond granularity: wake at the next due request, or at once if it is due.
      setTimeout(tick, Math.max(0, Math.floor((answers.length * intervalNs - now) / 1e6)));
    };
    tick();
  });
  const results = await Promise.all(answers);
  return {
    latencies: Float64Array.from(results, (r) => r.us),
    bad: results.filter((r) => !r.ok).length,
    lags,
  };
}

const percentile = (sorted: Float64Array, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

if (spec.warmSeconds > 0) await phase(spec.warmSeconds);
process.stdout.write('measuring\n');
const { latencies, bad, lags } = await phase(spec.seconds);
latencies.sort();
lags.sort();
const result: Result = {
  requests: latencies.length,
  bad,
  p50: percentile(latencies, 50),
  p90: percentile(latencies, 90),
  p99: percentile(latencies, 99),
  max: latencies[latencies.length - 1] ?? NaN,
  lagP99: percentile(lags, 99),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
agent.destroy();
