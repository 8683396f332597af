import { inChildSpan, outsideCall, SpanKind } from '../../common/tracing/call-trace.js';
import type { Redis } from 'ioredis';
import { Agent } from 'undici';
import { TollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { redisChannels } from '../../common/redis/schema.js';
import type { WakeRequest } from '../../common/resources/model-scaling.js';
import { reachable } from '../proxy/reachable.js';
import type { StartingReplica } from '../routing/route-table.js';

/**
 * A replica is ready: the route says so (`{}`), or one starting answered its readiness probe before
 * the route caught up (`early`, where it serves).
 */
export interface Warm {
  early?: StartingReplica;
}

/**
 * A starting replica's readiness probe is given this long, connection included; the next poll asks
 * again. A pod just started may not answer on its address for a moment.
 */
const PROBE_TIMEOUT_MS = 300;

/** How long a starting replica that answered ready is taken without asking it again. */
const RECENT_MS = 1_000;

/** How often a held call looks whether a replica is ready (a route lookup, cached in process). */
const POLL_MS = 100;
/**
 * Past this much of a wait, it looks five times less often: a model that takes long to start
 * gains little from the fast polls, and its starting replicas are asked less.
 */
const FAST_POLLS_FOR_MS = 10_000;
const SLOW_POLL_MS = 500;
/** A wake-up is sent again this often while calls wait (an operator may have missed the first). */
const REWAKE_MS = 2_000;

/**
 * Holds calls to a model version with no ready replica because it was scaled to zero (Knative's
 * activator): asks the operator for a replica on the wake-up channel, and lets the calls through
 * once one is ready. Calls that arrive together wait together, on one wake-up; past the model's
 * activation timeout they get 503 model_scaling_up with Retry-After.
 */
export class Activator {
  private readonly waiting = new Map<string, Promise<Warm>>();
  /**
   * A starting replica that answered ready a moment ago, by model|version: calls that come while
   * the route still says cold go to it without asking again (and without a log line each).
   */
  private readonly recent = new Map<string, { warm: Warm; at: number }>();
  /** Probes go on connections of their own, never a held call's pool. */
  private probes: Agent | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
    /** The platform's bound on a held call's wait (maxActivationWaitSeconds), whatever the Model asks. */
    private readonly maxWaitMs = Infinity,
  ) {}

  /**
   * Resolves with what `warm()` found once it finds a replica ready (calls held together share
   * it); `version` "" for an unversioned call.
   */
  hold(
    model: string,
    version: string,
    timeoutMs: number,
    warm: () => Promise<Warm | undefined>,
  ): Promise<Warm> {
    const key = `${model}|${version}`;
    const recent = this.recent.get(key);
    if (recent !== undefined && Date.now() - recent.at < RECENT_MS) return Promise.resolve(recent.warm);
    this.recent.delete(key);
    let pending = this.waiting.get(key);
    if (pending === undefined) {
      // Shared by every call held for it: its log lines are none of theirs.
      pending = outsideCall(() => this.wait({ model, version }, Math.min(timeoutMs, this.maxWaitMs), warm))
        .then((found) => {
          if (found.early !== undefined) {
            this.recent.set(key, { warm: found, at: Date.now() });
            setTimeout(() => this.recent.delete(key), RECENT_MS).unref();
          }
          return found;
        })
        .finally(() => this.waiting.delete(key));
      this.waiting.set(key, pending);
    }
    const held = pending;
    // Each held call's wait is a span of its own call, however many calls share the wake.
    return inChildSpan(
      'wake from zero',
      SpanKind.INTERNAL,
      { 'tollgate.model': model, ...(version === '' ? {} : { 'tollgate.model.version': version }) },
      () => held,
    );
  }

  /**
   * The first of `replicas` whose readiness probe passes now (2xx or 3xx, as the kubelet counts
   * it) and whose serving port takes a connection (the probe may be another container's port);
   * undefined if none does.
   */
  async firstReady(replicas: readonly StartingReplica[]): Promise<StartingReplica | undefined> {
    if (replicas.length === 0) return undefined;
    this.probes ??= new Agent({ connect: { timeout: PROBE_TIMEOUT_MS }, keepAliveTimeout: 1_000 });
    const agent = this.probes;
    const asked = replicas.map(async (r) => {
      const url = new URL(r.probe);
      const answer = await agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      });
      await answer.body.dump();
      if (answer.statusCode < 200 || answer.statusCode >= 400) throw new Error('not ready');
      if (!(await reachable(r.origin, PROBE_TIMEOUT_MS))) throw new Error('not serving');
      return r;
    });
    return Promise.any(asked).catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.probes?.close();
  }

  private async wait(
    request: WakeRequest,
    timeoutMs: number,
    warm: () => Promise<Warm | undefined>,
  ): Promise<Warm> {
    const started = Date.now();
    let woke = 0;
    for (;;) {
      if (Date.now() - woke >= REWAKE_MS) {
        woke = Date.now();
        await this.redis.publish(redisChannels.modelWake, JSON.stringify(request)).catch((err: unknown) => {
          this.log.warn({ err, model: request.model }, 'wake-up not sent; retrying');
        });
      }
      const found = await warm();
      if (found !== undefined) {
        this.log.info(
          { ...request, waitedMs: Date.now() - started, early: found.early?.origin },
          'model woke up',
        );
        return found;
      }
      if (Date.now() - started >= timeoutMs) throw scalingUp(request, timeoutMs);
      const pause = Date.now() - started < FAST_POLLS_FOR_MS ? POLL_MS : SLOW_POLL_MS;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

function scalingUp(request: WakeRequest, timeoutMs: number): TollgateError {
  const what =
    request.version === ''
      ? `model '${request.model}'`
      : `version '${request.version}' of model '${request.model}'`;
  return new TollgateError(
    'model_scaling_up',
    `${what} is starting a replica (it was scaled to zero) and none was ready within ${Math.round(timeoutMs / 1000)} s; retry shortly`,
    { headers: { 'retry-after': '5' } },
  );
}
