import type { Redis } from 'ioredis';
import { KEY_PREFIX } from './schema.js';

/**
 * Each model version's calls, failures and latency in 10-second buckets, summed over every central
 * gateway replica in Redis: what the operator's canary analysis judges (spec.rollout). Prometheus
 * holds the same figures per replica; this is the one place they add up without a metrics stack.
 *
 *   tg:vfig:<model>:<bucket>  hash, bucket = floor(ms / 10 000), 1 h TTL
 *     <version>|c    calls the gateway's checks passed (the runtime was asked)
 *     <version>|f    of those, failed: the runtime did not answer 200 where the default version did
 *     <version>|h<i> calls whose latency fell in LATENCY_BOUNDS_MS[i] (the last: above them all)
 *
 * Only central gateways write here (a sidecar's Redis user cannot): a tenant cannot fake a canary's
 * health, nor fail another team's rollout by writing figures.
 */
export const FIGURE_BUCKET_MS = 10_000;
export const FIGURE_TTL_S = 3600;
export const LATENCY_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000] as const;

export const versionFiguresKey = (model: string, bucket: number): string =>
  `${KEY_PREFIX}vfig:${model}:${bucket}`;

/** The histogram slot of a latency: the first bound it does not exceed, or the overflow slot. */
export function latencySlot(ms: number): number {
  const i = LATENCY_BOUNDS_MS.findIndex((b) => ms <= b);
  return i === -1 ? LATENCY_BOUNDS_MS.length : i;
}

export interface VersionFigures {
  calls: number;
  failures: number;
  /** The p95 latency's bucket bound (ms); Infinity past the last bound; undefined with no calls. */
  p95LatencyMs: number | undefined;
}

/** Quantile `q` of a histogram's counts: the bound of the slot it falls in. */
export function quantileOf(counts: readonly number[], q: number): number | undefined {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return undefined;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i] ?? 0;
    if (seen >= rank) return LATENCY_BOUNDS_MS[i] ?? Infinity;
  }
  return Infinity;
}

/** A version's figures over [fromMs, toMs], from every bucket that window touches (one pipeline). */
export async function readVersionFigures(
  redis: Redis,
  model: string,
  version: string,
  fromMs: number,
  toMs: number,
): Promise<VersionFigures> {
  const first = Math.floor(fromMs / FIGURE_BUCKET_MS);
  const last = Math.floor(toMs / FIGURE_BUCKET_MS);
  const fields = [`${version}|c`, `${version}|f`, ...LATENCY_BOUNDS_MS.map((_, i) => `${version}|h${i}`)];
  fields.push(`${version}|h${LATENCY_BOUNDS_MS.length}`);
  const pipeline = redis.pipeline();
  for (let b = Math.max(first, last - 360); b <= last; b++)
    pipeline.hmget(versionFiguresKey(model, b), ...fields);
  const results = (await pipeline.exec()) ?? [];
  let calls = 0;
  let failures = 0;
  const histogram = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
  for (const [err, value] of results) {
    if (err !== null) throw err;
    const row = (value as Array<string | null>).map((v) => Number(v ?? 0));
    calls += row[0] ?? 0;
    failures += row[1] ?? 0;
    for (let i = 0; i < histogram.length; i++) histogram[i] = (histogram[i] ?? 0) + (row[2 + i] ?? 0);
  }
  return { calls, failures, p95LatencyMs: quantileOf(histogram, 0.95) };
}
