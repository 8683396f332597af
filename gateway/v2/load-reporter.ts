import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';
import { redisKeys } from '../../common/redis/schema.js';
import { CENTRAL_SCOPE, signReport, type ReportSigner } from '../../common/redis/load-reports.js';
import { loadField } from '../../common/resources/model-scaling.js';
import { PeriodicFlush } from '../periodic-flush.js';

/** A report outlives a few missed writes, not a gateway that is gone. */
const REPORT_TTL_MS = 30_000;

interface Tally {
  inFlight: number;
  /** Integral of calls in flight over time since the last report (call-ms). */
  area: number;
  /** When the current report interval began. */
  since: number;
  /** When inFlight last changed (or the interval began). */
  mark: number;
}

/**
 * The calls in flight on each model version at this gateway, as their mean over each report
 * interval (Knative's concurrency), written to Redis for the operator's autoscaler: the gateways
 * see every call, so no metrics pipeline stands between the load and the replicas.
 */
export class LoadReporter {
  private readonly tallies = new Map<string, Tally>();
  private readonly flusher: PeriodicFlush;
  readonly gateway = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
    /** None (a sidecar given no report key): nothing is reported, since nothing would be believed. */
    private readonly signer: ReportSigner | undefined,
    everyMs = 1_000,
  ) {
    this.flusher = new PeriodicFlush(() => this.write(), everyMs);
  }

  start(): void {
    this.flusher.start();
  }

  stop(): Promise<void> {
    return this.flusher.stop();
  }

  /** A call to a model version begins; the returned function ends it (once). */
  begin(model: string, version: string): () => void {
    const key = `${model}\u0000${version}`;
    const now = performance.now();
    let t = this.tallies.get(key);
    if (t === undefined) {
      t = { inFlight: 0, area: 0, since: now, mark: now };
      this.tallies.set(key, t);
    }
    const tally = t;
    accrue(tally, now);
    tally.inFlight += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      accrue(tally, performance.now());
      tally.inFlight -= 1;
    };
  }

  private async write(): Promise<void> {
    const signer = this.signer;
    if (this.tallies.size === 0 || signer === undefined) {
      this.tallies.clear();
      return;
    }
    const now = performance.now();
    const at = Date.now();
    const pipeline = this.redis.pipeline();
    for (const [key, tally] of this.tallies) {
      const [model = '', version = ''] = key.split('\u0000');
      const span = Math.max(now - tally.since, 1);
      accrue(tally, now);
      const concurrency = Math.round((tally.area / span) * 1000) / 1000;
      tally.area = 0;
      tally.since = now;
      // A version with nothing in flight is reported idle once, then forgotten until its next call.
      if (tally.inFlight === 0 && concurrency === 0) this.tallies.delete(key);
      const redisKey =
        signer.scope === CENTRAL_SCOPE ? redisKeys.modelLoad(model) : redisKeys.sidecarModelLoad(model);
      const field = loadField(this.gateway, version);
      const report = signReport(signer, redisKey, field, { concurrency, at });
      pipeline.hset(redisKey, field, JSON.stringify(report));
      pipeline.pexpire(redisKey, REPORT_TTL_MS);
    }
    try {
      await pipeline.exec();
    } catch (err) {
      this.log.debug({ err }, 'load report not written; the next one will be');
    }
  }
}

/** Adds the calls in flight since the tally's last change to its integral. */
function accrue(tally: Tally, now: number): void {
  if (tally.inFlight > 0) tally.area += tally.inFlight * (now - tally.mark);
  tally.mark = now;
}
