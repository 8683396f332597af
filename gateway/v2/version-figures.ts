import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';
import {
  FIGURE_BUCKET_MS,
  FIGURE_TTL_S,
  latencySlot,
  versionFiguresKey,
} from '../../common/redis/version-figures.js';
import { PeriodicFlush } from '../periodic-flush.js';

/**
 * The figures the operator's canary analysis judges (common/redis/version-figures.ts), counted in
 * memory per model, bucket and field and written in one pipeline a second: no Redis round trip
 * on a call's path.
 */
export class VersionFigureRecorder {
  /** model → bucket → field → count */
  private pending = new Map<string, Map<number, Map<string, number>>>();
  private readonly flusher: PeriodicFlush;

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
    flushMs = 1_000,
  ) {
    this.flusher = new PeriodicFlush(() => this.write(), flushMs);
  }

  /** One call of a version the runtime was asked to answer; `failed`: it did not. */
  record(model: string, version: string, failed: boolean, latencyMs: number, nowMs = Date.now()): void {
    let buckets = this.pending.get(model);
    if (buckets === undefined) {
      buckets = new Map();
      this.pending.set(model, buckets);
    }
    const bucket = Math.floor(nowMs / FIGURE_BUCKET_MS);
    let fields = buckets.get(bucket);
    if (fields === undefined) {
      fields = new Map();
      buckets.set(bucket, fields);
    }
    const add = (field: string) => fields.set(field, (fields.get(field) ?? 0) + 1);
    add(`${version}|c`);
    if (failed) add(`${version}|f`);
    add(`${version}|h${latencySlot(latencyMs)}`);
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
    for (const [model, buckets] of batch) {
      for (const [bucket, fields] of buckets) {
        const key = versionFiguresKey(model, bucket);
        for (const [field, n] of fields) pipeline.hincrby(key, field, n);
        pipeline.expire(key, FIGURE_TTL_S);
      }
    }
    try {
      await pipeline.exec();
    } catch (err) {
      // A lost second of figures makes a step's judgement a little less sure, never wrong-way round.
      this.log.warn({ err: (err as Error).message }, 'version figures flush failed');
    }
  }
}
