import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../common/logger.js';
import { redisKeys } from '../common/redis/schema.js';
import type { EntryVerifier } from '../common/redis/sealed-entry.js';
import type { RouteWriter } from '../common/routes/workflow-routes.js';
import type { Controller } from './framework/controller.js';
import type { Runnable } from './framework/runnable.js';
import { sweepStaleRoutes } from './rebuild.js';

/** How long a rebuild waits for failed reconciles to succeed on retry before it sweeps. */
const SETTLE_MS = 15_000;
/** How often a sweep left to later is tried again while some resource still fails. */
const SWEEP_AGAIN_MS = 30_000;
/** How long the periodic index check waits for Redis before it takes the connection for dead. */
const INDEX_CHECK_TIMEOUT_MS = 2_000;

// Sets the marker only if the build's own token is still there: a Redis flushed or restarted
// empty while the build ran lost the token with the entries, and must not be marked built.
const MARK_BUILT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[1])
return 1`;

export interface IndexKeeperOptions {
  log: Logger;
  /** Only routes of this namespace's resources are swept (any, when unscoped). */
  namespace?: string;
  /** How often to check that Redis still holds the index (a flush or an empty restart). */
  indexCheckMs?: number;
}

/**
 * Keeps Redis' index whole for one leadership term: builds it when the term starts, and again
 * whenever Redis lost it (flushed, restarted empty, or a reconnect that may have reached another
 * server), then marks it built. It knows the controllers only by what their reconcilers declare
 * (`writeAll`, `liveRoutes`, `sweepStale`): the controllers' caches must have synced before it
 * starts; it starts the workers of those with a bulk write itself, after the first one.
 */
export class IndexKeeper implements Runnable {
  readonly name = 'index';
  readonly needsLeader = true;
  /** Settles once the first full build is done (tests, readiness). */
  firstRebuild: Promise<void> = Promise.resolve();
  private indexTimer: NodeJS.Timeout | undefined;
  private rebuilding: Promise<void> | undefined;
  private stopped = false;
  /**
   * A reconnect may reach another server (a Sentinel failover promotes a replica) that never got
   * the last writes: a deleted key's entry could be back. So every reconnect after the first
   * resyncs the whole index from the resources, and the new marker tells the gateways to drop
   * their caches.
   */
  private readonly onRedisReady = () => {
    if (this.connectedBefore) this.resyncPending = true;
    this.connectedBefore = true;
    void this.checkIndex();
  };
  private connectedBefore = false;
  private resyncPending = false;
  /** The last sweep left the routes of unsettled resources: they are judged again later. */
  private sweepPending = false;
  private sweptAt = 0;
  /** An index check is waiting on Redis: the next tick does not pile another on it. */
  private checking = false;

  constructor(
    private readonly redis: Redis,
    private readonly controllers: Controller[],
    private readonly routes: RouteWriter,
    private readonly verifier: EntryVerifier,
    private readonly opts: IndexKeeperOptions,
  ) {}

  async start(): Promise<void> {
    // Tracked like any rebuild: the index check must not start a second one meanwhile.
    this.firstRebuild = this.rebuilding = this.rebuild().finally(() => (this.rebuilding = undefined));
    // Connected already: the next 'ready' is a reconnect.
    this.connectedBefore = this.redis.status === 'ready';
    this.redis.on('ready', this.onRedisReady);
    this.indexTimer = setInterval(() => void this.checkIndex(), this.opts.indexCheckMs ?? 1000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.indexTimer);
    this.redis.off('ready', this.onRedisReady);
  }

  private async checkIndex(): Promise<void> {
    if (this.stopped || this.rebuilding || this.checking) return;
    const resync = this.resyncPending;
    this.checking = true;
    try {
      if (!resync) {
        const built = await this.markerExists();
        // Built; or no answer, and the reconnect it forced resyncs once Redis is back.
        if (built === true && this.sweepPending) await this.sweepOnceSettled();
        if (built !== false) return;
      }
    } catch {
      return; // Redis is down; checked again when it is back.
    } finally {
      this.checking = false;
    }
    this.resyncPending = false;
    if (resync) this.opts.log.warn('Redis reconnected (perhaps to a new primary); resyncing the index');
    else
      this.opts.log.warn(
        'the Redis index is missing (flushed or restarted empty); rebuilding it from the resources',
      );
    this.rebuilding = this.rebuild().finally(() => (this.rebuilding = undefined));
  }

  /**
   * The sweep a rebuild left to later (some reconciles failed or ran on), while the queues are
   * idle: the routes of resources that have settled since are judged, so one a resource no longer
   * holds (a Service relabelled while the operator was down) does not outlive another's failure.
   * At most every SWEEP_AGAIN_MS: each is a SCAN of every route.
   */
  private async sweepOnceSettled(): Promise<void> {
    if (this.controllers.some((c) => c.queue.busy > 0)) return;
    if (Date.now() - this.sweptAt < SWEEP_AGAIN_MS) return;
    this.sweptAt = Date.now();
    const failing = this.controllers.some((c) => c.failing > 0);
    await sweepStaleRoutes(this.redis, this.verifier, this.opts.namespace, this.liveRoutes, this.unsettled);
    // A resource that fails for good keeps its own routes; every other one's are judged now.
    this.sweepPending = failing;
  }

  private readonly liveRoutes = (): string[] =>
    this.controllers.flatMap((c) => [...(c.reconciler.liveRoutes?.() ?? [])]);

  /** The resource behind a route's source is queued, running or failing: its reconcile decides. */
  private readonly unsettled = (source: string): boolean =>
    this.controllers.some((c) => {
      const key = c.reconciler.keyOf?.(source);
      return key !== undefined && c.queue.unsettled(key);
    });

  /**
   * Whether the index marker is there; undefined when Redis did not answer in time. A primary lost
   * with its node leaves an idle connection open to an address that no longer answers (packets
   * dropped, no reset): without a deadline the check would wait on it while the gateways, already
   * on the new (empty) primary, answer 503 with no one rebuilding. So a check Redis does not
   * answer drops the connection, and the reconnect (to the current primary) resyncs the index.
   */
  private async markerExists(): Promise<boolean | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), INDEX_CHECK_TIMEOUT_MS);
    });
    try {
      const answer = await Promise.race([this.redis.exists(redisKeys.indexMarker), late]);
      if (answer === undefined && !this.stopped) {
        this.opts.log.warn(
          { timeoutMs: INDEX_CHECK_TIMEOUT_MS },
          'Redis did not answer the index check; reconnecting (a lost primary?)',
        );
        this.redis.disconnect(true);
      }
      return answer === undefined ? undefined : answer === 1;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Idle, with failed reconciles given their retries; bounded, since a lasting failure stays
   * failing and a reconcile may hang on what a resource's author controls (a Model's store).
   * True when every reconcile settled and none is failing.
   */
  private async settled(): Promise<boolean> {
    // Every resource is tried once before the index is called whole: one not yet reconciled would
    // answer "no such service" (404) instead of "retry" (503). Each try is bounded (a store's
    // check 20 s), so the queues drain; what runs on or fails after that is bounded below.
    while (!this.stopped && this.controllers.some((c) => c.queue.length > 0)) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      const idle = await within(
        Promise.all(this.controllers.map((c) => c.idle())),
        Math.max(deadline - Date.now(), 0),
      );
      if (idle && !this.controllers.some((c) => c.failing > 0)) return true;
      if (this.stopped || Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Reconciles everything, waits for the queues to drain, removes what no resource backs any more,
   * then marks the index as built, unless Redis lost data meanwhile (the build's token is gone):
   * then it is built again. The marker is never set over an index this build did not fill.
   */
  private async rebuild(): Promise<void> {
    const token = randomUUID();
    try {
      await this.redis.set(redisKeys.indexBuilding, token);
    } catch {
      this.resyncPending = true; // Redis is down: built again once it is back.
      return;
    }
    const began = performance.now();
    let keys = 0;
    const bulk = this.controllers.filter((c) => c.reconciler.writeAll !== undefined);
    // Every bulk entry (the keys'): those unchanged since written may be what Redis lost.
    try {
      for (const c of bulk) keys += await c.reconciler.writeAll!();
    } catch (err) {
      this.opts.log.warn({ err }, 'index rebuild interrupted: Redis failed during the bulk write; retrying');
      this.resyncPending = true;
      return;
    } finally {
      for (const c of bulk) c.start();
    }
    // Routes are rewritten, not compared, so one whose seal was tampered with is repaired.
    this.routes.rewriteAll(true);
    const written = performance.now();
    for (const c of this.controllers) c.enqueueAll();
    const clean = await this.settled();
    const settled = performance.now();
    this.routes.rewriteAll(false);
    if (this.stopped) return;
    // A route missing from liveRoutes() may belong to a reconcile that failed (or hangs) and will
    // be retried: sweeping it would cut traffic to a ready model. So the routes of a resource not
    // settled are left to its reconcile, and every other route is judged now: one failing
    // resource must not keep a deleted Service's route alive. Those left are judged again once
    // their resources settle (sweepOnceSettled).
    if (!clean)
      this.opts.log.warn(
        'some reconciles are failing or still running; their resources’ routes are left to them',
      );
    try {
      await sweepStaleRoutes(this.redis, this.verifier, this.opts.namespace, this.liveRoutes, this.unsettled);
      this.sweepPending = !clean;
      this.sweptAt = Date.now();
      for (const c of this.controllers) await c.reconciler.sweepStale?.();
      const marked = await this.redis.eval(
        MARK_BUILT,
        2,
        redisKeys.indexBuilding,
        redisKeys.indexMarker,
        token,
        new Date().toISOString(),
      );
      if (marked !== 1) {
        this.opts.log.warn('Redis lost data while the index was being built; building it again');
        this.resyncPending = true;
      } else {
        const ms = (from: number, to: number) => Math.round(to - from);
        this.opts.log.info(
          {
            keys,
            writeMs: ms(began, written),
            reconcileMs: ms(written, settled),
            sweepMs: ms(settled, performance.now()),
          },
          'index built',
        );
      }
    } catch (err) {
      this.opts.log.warn({ err }, 'index rebuild incomplete; retrying on the next check');
    }
  }
}

/** Whether `promise` settled within `ms` (it is not cancelled, only no longer waited for). */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
