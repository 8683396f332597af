import type { Redis } from 'ioredis';
import { usageBuckets } from '../../common/apikey/usage.js';
import type { Logger } from '../../common/logger.js';
import { hmgetRecord } from '../../common/redis/hmget-record.js';
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
  /** Copies sent to the shadow version (spec.shadow), answered or failed. */
  shadowCalls: number;
  shadowAgreed: number;
  shadowFailed: number;
  /** Summed over the answered copies: the shadow's time, and the serving runtime's on the same calls. */
  shadowLatencyMs: number;
  servingLatencyMs: number;
}

export type ShadowOutcome = 'agreed' | 'disagreed' | 'failed';

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
    const bucket = this.minute(model, nowMs);
    bucket.calls++;
    if (status !== 200) bucket.errors++;
    bucket.latencyMs += latencyMs;
  }

  /** One copy of a call a shadow version answered (or failed), with both versions' runtime times. */
  recordShadow(
    model: string,
    outcome: ShadowOutcome,
    shadowMs: number,
    servingMs: number,
    nowMs = Date.now(),
  ): void {
    const bucket = this.minute(model, nowMs);
    bucket.shadowCalls++;
    if (outcome === 'failed') {
      bucket.shadowFailed++;
      return;
    }
    if (outcome === 'agreed') bucket.shadowAgreed++;
    bucket.shadowLatencyMs += shadowMs;
    bucket.servingLatencyMs += servingMs;
  }

  private minute(model: string, nowMs: number): Minute {
    let minutes = this.pending.get(model);
    if (minutes === undefined) {
      minutes = new Map();
      this.pending.set(model, minutes);
    }
    const minute = Math.floor(nowMs / 60_000);
    let bucket = minutes.get(minute);
    if (bucket === undefined) {
      bucket = {
        calls: 0,
        errors: 0,
        latencyMs: 0,
        shadowCalls: 0,
        shadowAgreed: 0,
        shadowFailed: 0,
        shadowLatencyMs: 0,
        servingLatencyMs: 0,
      };
      minutes.set(minute, bucket);
    }
    return bucket;
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
        const adder = (key: string) => (field: string, n: number) => {
          if (n > 0) pipeline.hincrby(key, `${b.minuteOfDay}${field}`, Math.round(n));
        };
        const calls = redisKeys.modelUsageMinutes(model, b.day);
        const add = adder(calls);
        add('r', m.calls);
        add('e', m.errors);
        add('l', m.latencyMs);
        pipeline.expire(calls, MINUTE_TTL_S);
        if (m.shadowCalls === 0) continue;
        const shadow = redisKeys.shadowUsageMinutes(model, b.day);
        const addShadow = adder(shadow);
        addShadow('sc', m.shadowCalls);
        addShadow('sa', m.shadowAgreed);
        addShadow('sf', m.shadowFailed);
        addShadow('sl', m.shadowLatencyMs);
        addShadow('sp', m.servingLatencyMs);
        pipeline.expire(shadow, MINUTE_TTL_S);
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

/** A shadow version's copies over the span read: how many, how many agreed or failed, mean times. */
export interface ShadowFigures {
  calls: number;
  agreed: number;
  failed: number;
  /** agreed / answered copies; null before any copy was answered. */
  agreementRate: number | null;
  meanLatencyMs: number;
  servingMeanLatencyMs: number;
}

export interface ModelUsage {
  perMinute: ModelUsagePoint[];
  shadow: ShadowFigures;
}

const CALL_FIELDS = ['r', 'e', 'l'] as const;

const SHADOW_FIELDS = ['sc', 'sa', 'sf', 'sl', 'sp'] as const;

/** The last `minutes` minutes of each model's calls, oldest first, and its shadow's (one pipeline). */
export async function readModelUsage(
  redis: Redis,
  models: readonly string[],
  minutes = 60,
  nowMs = Date.now(),
): Promise<Map<string, ModelUsage>> {
  const last = Math.floor(nowMs / 60_000);
  const span = Array.from({ length: minutes }, (_, i) => (last - minutes + 1 + i) * 60_000);
  const days = [...new Set(span.map((ms) => usageBuckets(ms).day))];
  // Only the fields of the minutes shown, never the whole hash: a sidecar's Redis user (whose
  // password a team reads) may add fields to any model's, as many as it likes.
  const minutesOf = (day: string) =>
    span.map(usageBuckets).flatMap((b) => (b.day === day ? [b.minuteOfDay] : []));
  const fieldsOf = (day: string, suffixes: readonly string[]) =>
    minutesOf(day).flatMap((m) => suffixes.map((f) => `${m}${f}`));
  const wanted = new Map(
    days.map((day) => [day, [fieldsOf(day, CALL_FIELDS), fieldsOf(day, SHADOW_FIELDS)] as const]),
  );
  const pipeline = redis.pipeline();
  for (const model of models)
    for (const day of days) {
      const [calls, shadows] = wanted.get(day) ?? [[], []];
      pipeline.hmget(redisKeys.modelUsageMinutes(model, day), ...calls);
      pipeline.hmget(redisKeys.shadowUsageMinutes(model, day), ...shadows);
    }
  const results = (await pipeline.exec()) ?? [];
  const out = new Map<string, ModelUsage>();
  const mean = (sum: number, n: number) => (n === 0 ? 0 : Math.round((sum / n) * 10) / 10);
  models.forEach((model, mi) => {
    const byDay = new Map<string, Record<string, string>>();
    const shadowByDay = new Map<string, Record<string, string>>();
    days.forEach((day, di) => {
      const at = (mi * days.length + di) * 2;
      const [calls, shadows] = wanted.get(day) ?? [[], []];
      byDay.set(day, hmgetRecord(calls, results[at]));
      shadowByDay.set(day, hmgetRecord(shadows, results[at + 1]));
    });
    const sums = { sc: 0, sa: 0, sf: 0, sl: 0, sp: 0 };
    // Counts only grow; one written out of range (by hand) is read as none.
    const count = (hash: Record<string, string>, name: string) => {
      const n = Number(hash[name] ?? 0);
      return Number.isFinite(n) && n > 0 ? n : 0;
    };
    const perMinute = span.map((ms) => {
      const b = usageBuckets(ms);
      const hash = byDay.get(b.day) ?? {};
      const field = (f: string) => count(hash, `${b.minuteOfDay}${f}`);
      const shadowHash = shadowByDay.get(b.day) ?? {};
      for (const f of Object.keys(sums) as Array<keyof typeof sums>)
        sums[f] += count(shadowHash, `${b.minuteOfDay}${f}`);
      const calls = field('r');
      return {
        at: new Date(ms).toISOString(),
        calls,
        errors: field('e'),
        meanLatencyMs: mean(field('l'), calls),
      };
    });
    sums.sa = Math.min(sums.sa, sums.sc);
    sums.sf = Math.min(sums.sf, sums.sc - sums.sa);
    const answered = sums.sc - sums.sf;
    out.set(model, {
      perMinute,
      shadow: {
        calls: sums.sc,
        agreed: sums.sa,
        failed: sums.sf,
        agreementRate: answered === 0 ? null : Math.round((sums.sa / answered) * 1000) / 1000,
        meanLatencyMs: mean(sums.sl, answered),
        servingMeanLatencyMs: mean(sums.sp, answered),
      },
    });
  });
  return out;
}
