import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';
import { redisKeys } from '../../common/redis/schema.js';
import { usageBuckets } from '../../common/apikey/usage.js';
import { PeriodicFlush } from '../periodic-flush.js';

interface Pending {
  count: number;
  refused: number;
  /** Rows of the batches its inference calls sent (validate-infer.ts). */
  rows: number;
  lastUsedMs: number;
  /** Per minute (epoch minute): [requests, refusals, rows]. */
  minutes: Map<number, [number, number, number]>;
  endpoints: Map<string, number>;
}

const MINUTE_TTL_S = 26 * 3600;
const HOUR_TTL_S = 62 * 86_400;
const TOP_ENDPOINTS = 100;

/**
 * Usage figures per key, kept in memory on the request path (a few map updates) and written to
 * Redis in one pipeline every `flushMs`: totals and last use, requests and refusals per minute (a
 * day's hash, kept 26 h) and per hour (a month's hash, kept 62 days), and requests per endpoint.
 * A failed flush keeps the figures and retries with the next one, so a Redis blip loses nothing.
 */
export class UsageRecorder {
  private pending = new Map<string, Pending>();
  private readonly flusher: PeriodicFlush;

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
    flushMs: number,
    /** Off: totals and last use only (the gateway's usageSeries setting). */
    private readonly series = true,
  ) {
    this.flusher = new PeriodicFlush(() => this.write(), flushMs);
  }

  /** An authorised call of `endpoint` (`POST /v2/models/m/infer`). */
  record(keyId: string, endpoint: string, nowMs = Date.now()): void {
    const entry = this.entry(keyId);
    entry.count++;
    entry.lastUsedMs = Math.max(entry.lastUsedMs, nowMs);
    if (!this.series) return;
    this.minute(entry, nowMs)[0]++;
    entry.endpoints.set(endpoint, (entry.endpoints.get(endpoint) ?? 0) + 1);
  }

  /** The rows of an admitted inference call's batch, once it is checked. */
  rows(keyId: string, rows: number, nowMs = Date.now()): void {
    if (rows <= 0) return;
    const entry = this.entry(keyId);
    entry.rows += rows;
    if (this.series) this.minute(entry, nowMs)[2] += rows;
  }

  /** A call refused although its key exists (expired, rolled, denied, rate-limited). */
  refused(keyId: string, nowMs = Date.now()): void {
    const entry = this.entry(keyId);
    entry.refused++;
    if (this.series) this.minute(entry, nowMs)[1]++;
  }

  start(): void {
    this.flusher.start();
  }

  /** Stops the timer and writes what is left. */
  stop(): Promise<void> {
    return this.flusher.stop();
  }

  flush(): Promise<void> {
    return this.flusher.flush();
  }

  private entry(keyId: string): Pending {
    let entry = this.pending.get(keyId);
    if (entry === undefined) {
      entry = { count: 0, refused: 0, rows: 0, lastUsedMs: 0, minutes: new Map(), endpoints: new Map() };
      this.pending.set(keyId, entry);
    }
    return entry;
  }

  private minute(entry: Pending, nowMs: number): [number, number, number] {
    const minute = Math.floor(nowMs / 60_000);
    let bucket = entry.minutes.get(minute);
    if (bucket === undefined) {
      bucket = [0, 0, 0];
      entry.minutes.set(minute, bucket);
    }
    return bucket;
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const pipeline = this.redis.pipeline();
    for (const [id, p] of batch) {
      const totals = redisKeys.keyUsage(id);
      if (p.count > 0) {
        pipeline.hincrby(totals, 'count', p.count);
        pipeline.hset(totals, 'lastUsed', new Date(p.lastUsedMs).toISOString());
      }
      if (p.refused > 0) pipeline.hincrby(totals, 'refused', p.refused);
      if (p.rows > 0) pipeline.hincrby(totals, 'rows', p.rows);
      for (const [minute, [requests, refusals, rows]] of p.minutes) {
        const b = usageBuckets(minute * 60_000);
        const minutes = redisKeys.keyUsageMinutes(id, b.day);
        const hours = redisKeys.keyUsageHours(id, b.month);
        if (requests > 0) {
          pipeline.hincrby(minutes, `${b.minuteOfDay}r`, requests);
          pipeline.hincrby(hours, `${b.hourOfMonth}r`, requests);
        }
        if (refusals > 0) {
          pipeline.hincrby(minutes, `${b.minuteOfDay}x`, refusals);
          pipeline.hincrby(hours, `${b.hourOfMonth}x`, refusals);
        }
        if (rows > 0) {
          pipeline.hincrby(minutes, `${b.minuteOfDay}w`, rows);
          pipeline.hincrby(hours, `${b.hourOfMonth}w`, rows);
        }
        pipeline.expire(minutes, MINUTE_TTL_S);
        pipeline.expire(hours, HOUR_TTL_S);
      }
      if (p.endpoints.size > 0) {
        const endpoints = redisKeys.keyUsageEndpoints(id);
        for (const [endpoint, n] of p.endpoints) pipeline.zincrby(endpoints, n, endpoint);
        // Only the busiest endpoints are kept: paths with ids in them cannot grow it without bound.
        pipeline.zremrangebyrank(endpoints, 0, -(TOP_ENDPOINTS + 1));
        pipeline.expire(endpoints, HOUR_TTL_S);
      }
    }
    let results: Awaited<ReturnType<typeof pipeline.exec>>;
    try {
      results = await pipeline.exec();
    } catch (err) {
      this.restore(batch);
      this.log.warn({ err: (err as Error).message, keys: batch.size }, 'usage flush failed; will retry');
      return;
    }
    // A command refused by Redis (not a lost connection) would fail again: report, do not retry.
    const refused = results?.find(([err]) => err !== null);
    if (refused) this.log.error({ err: refused[0]?.message }, 'usage write refused by redis');
  }

  /** Puts a batch that could not be written back, merged with what arrived meanwhile. */
  private restore(batch: Map<string, Pending>): void {
    for (const [id, old] of batch) {
      const now = this.entry(id);
      now.count += old.count;
      now.refused += old.refused;
      now.rows += old.rows;
      now.lastUsedMs = Math.max(now.lastUsedMs, old.lastUsedMs);
      for (const [minute, [r, x, w]] of old.minutes) {
        const bucket = this.minute(now, minute * 60_000);
        bucket[0] += r;
        bucket[1] += x;
        bucket[2] += w;
      }
      for (const [e, n] of old.endpoints) now.endpoints.set(e, (now.endpoints.get(e) ?? 0) + n);
    }
  }
}
