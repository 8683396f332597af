import type { Redis } from 'ioredis';
import { usageBuckets } from '../../common/apikey/usage.js';
import type { Logger } from '../../common/logger.js';
import { redisKeys } from '../../common/redis/schema.js';
import { PeriodicFlush } from '../periodic-flush.js';

/**
 * Each model's calls, errors and latency per minute, shared by every gateway replica through
 * Redis (the Prometheus figures are per replica): what the panel's Models page draws. Counted in
 * memory and written in one pipeline per flush, like the keys' usage (gateway/auth/usage.ts).
 */
const MINUTE_TTL_S = 26 * 3600;

interface Minute {
  calls: number;
  errors: number;
  latencyMs: number;
}

export class ModelUsageRecorder {
  private pending = new Map<string, Map<number, Minute>>();
  private readonly flusher: PeriodicFlush;

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
    flushMs: number,
  ) {
    this.flusher = new PeriodicFlush(() => this.write(), flushMs);
  }

  /** One answered call; an error is any answer but 200. */
  record(model: string, status: number, latencyMs: number, nowMs = Date.now()): void {
    let minutes = this.pending.get(model);
    if (minutes === undefined) {
      minutes = new Map();
      this.pending.set(model, minutes);
    }
    const minute = Math.floor(nowMs / 60_000);
    let bucket = minutes.get(minute);
    if (bucket === undefined) {
      bucket = { calls: 0, errors: 0, latencyMs: 0 };
      minutes.set(minute, bucket);
    }
    bucket.calls++;
    if (status !== 200) bucket.errors++;
    bucket.latencyMs += latencyMs;
  }

  start(): void {
    this.flusher.start();
  }

  stop(): Promise<void> {
    return this.flusher.stop();
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const pipeline = this.redis.pipeline();
    for (const [model, minutes] of batch) {
      for (const [minute, m] of minutes) {
        const b = usageBuckets(minute * 60_000);
        const key = redisKeys.modelUsageMinutes(model, b.day);
        pipeline.hincrby(key, `${b.minuteOfDay}r`, m.calls);
        if (m.errors > 0) pipeline.hincrby(key, `${b.minuteOfDay}e`, m.errors);
        pipeline.hincrby(key, `${b.minuteOfDay}l`, Math.round(m.latencyMs));
        pipeline.expire(key, MINUTE_TTL_S);
      }
    }
    try {
      await pipeline.exec();
    } catch (err) {
      // Figures for a chart: a lost flush is logged, not retried (the next minute carries on).
      this.log.warn({ err: (err as Error).message, models: batch.size }, 'model usage flush failed');
    }
  }
}

/** One minute of a model's calls: the count, the errors and the mean latency (ms). */
export interface ModelUsagePoint {
  at: string;
  calls: number;
  errors: number;
  meanLatencyMs: number;
}

/** The last `minutes` minutes of each model's calls, oldest first (one pipeline). */
export async function readModelUsage(
  redis: Redis,
  models: readonly string[],
  minutes = 60,
  nowMs = Date.now(),
): Promise<Map<string, ModelUsagePoint[]>> {
  const last = Math.floor(nowMs / 60_000);
  const span = Array.from({ length: minutes }, (_, i) => (last - minutes + 1 + i) * 60_000);
  const days = [...new Set(span.map((ms) => usageBuckets(ms).day))];
  const pipeline = redis.pipeline();
  for (const model of models)
    for (const day of days) pipeline.hgetall(redisKeys.modelUsageMinutes(model, day));
  const results = (await pipeline.exec()) ?? [];
  const out = new Map<string, ModelUsagePoint[]>();
  models.forEach((model, mi) => {
    const byDay = new Map<string, Record<string, string>>();
    days.forEach((day, di) => {
      const [err, value] = results[mi * days.length + di] ?? [null, {}];
      if (err === null) byDay.set(day, (value ?? {}) as Record<string, string>);
    });
    out.set(
      model,
      span.map((ms) => {
        const b = usageBuckets(ms);
        const hash = byDay.get(b.day) ?? {};
        const calls = Number(hash[`${b.minuteOfDay}r`] ?? 0);
        const latency = Number(hash[`${b.minuteOfDay}l`] ?? 0);
        return {
          at: new Date(ms).toISOString(),
          calls,
          errors: Number(hash[`${b.minuteOfDay}e`] ?? 0),
          meanLatencyMs: calls === 0 ? 0 : Math.round((latency / calls) * 10) / 10,
        };
      }),
    );
  });
  return out;
}
