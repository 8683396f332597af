import { connectRedis } from '../common/redis/connect.js';
/**
 * The operator: three controllers (Model, ApiKey, workflow Service) over one Redis, started while
 * this replica leads.
 *
 * THE SEAM (standalone mode). Everything the controllers touch outside Redis comes in through
 * `OperatorSources`:
 *   - `models`, `apiKeys`: ResourceSource (list + watch + fresh read + status/finalizer writes),
 *   - `services`: WatchedSource of workflow Services (labels tollgate.dev/workflow, tollgate.dev/service),
 *     and `serviceAddress`, where their routes go,
 *   - `workflows`: WatchedSource of Workflow records (who owns a workflow, which namespaces serve it),
 *   - `runtime`: RuntimeDriver (apply a RuntimePlan → RuntimeState; remove; watch for changes),
 *   - `events`: EventRecorder, `credentials`: CredentialsResolver (storage env per Model).
 * On a cluster, `kubeSources()` (kube-sources.ts) provides informers, Deployments + Services, core
 * Events and credentials Secrets. Standalone mode (`tollgate dev`) provides ResourceSources over
 * common/resources/manifest-dir.ts, a RuntimeDriver that runs a local MLServer process on the pulled
 * folder (operator/puller/pull.ts + serving/runtime-driver.ts contract), LogEventRecorder and
 * ProcessEnvCredentials, and runs `new OperatorManager(sources, { redisUrl })` without leader
 * election. The controllers cannot tell the difference.
 */
import { randomUUID } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Redis } from 'ioredis';
import { KeyIndexWriter } from '../common/apikey/index-writer.js';
import type { Logger } from '../common/logger.js';
import { redisKeys } from '../common/redis/schema.js';
import type { Model } from '../common/resources/model.js';
import { ApiKeyReconciler, type ApiKeyResource } from './controllers/apikey-controller.js';
import { Controller } from './framework/controller.js';
import { ModelReconciler } from './controllers/model-controller.js';
import { Autoscaler } from './scaling/autoscaler.js';
import { WorkflowServiceReconciler, type ServiceAddress } from './controllers/workflow-service-controller.js';
import type { WorkflowService } from '../common/resources/workflow-service.js';
import type { Workflow } from '../common/resources/workflow.js';
import { WorkflowAdmission } from './workflows/workflow-admission.js';
import type { EventRecorder } from './events.js';
import { LeaderElector, type LeaderElectionOptions } from './framework/leader-election.js';
import { OperatorMetrics } from './metrics.js';
import { sweepStaleKeys, sweepStaleRoutes } from './rebuild.js';
import { ReportChecker } from '../common/redis/load-reports.js';
import { RouteWriter } from '../common/routes/workflow-routes.js';
import { UsageStatusSync } from './usage-status.js';
import type { RuntimeDriver } from './serving/runtime-driver.js';
import type { ResourceSource, WatchedSource } from './framework/resource-source.js';
import type { CredentialsResolver } from './storage/credentials.js';
import type { StoredKey } from '../common/crypto/key-file.js';
import { EntrySealer, EntryVerifier } from '../common/redis/sealed-entry.js';
import type { ModelGateway } from '../common/resources/model.js';

/** How long a rebuild waits for failed reconciles to succeed on retry before it sweeps. */
const SETTLE_MS = 15_000;
/** How long the periodic index check waits for Redis before it takes the connection for dead. */
const INDEX_CHECK_TIMEOUT_MS = 2_000;

// Sets the marker only if the build's own token is still there: a Redis flushed or restarted
// empty while the build ran lost the token with the entries, and must not be marked built.
const MARK_BUILT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[1])
return 1`;

export interface OperatorSources {
  models: ResourceSource<Model>;
  apiKeys: ResourceSource<ApiKeyResource>;
  services: WatchedSource<WorkflowService>;
  /** Workflow records: a workflow's owner and the namespaces that may serve it (never labels). */
  workflows: WatchedSource<Workflow>;
  /** Where a workflow Service's route goes: its cluster DNS name, or standalone's URL annotation. */
  serviceAddress: ServiceAddress;
  runtime: RuntimeDriver;
  events: EventRecorder;
  credentials: CredentialsResolver;
}

export interface OperatorOptions {
  redisUrl: string;
  log: Logger;
  metrics?: OperatorMetrics;
  /** Only resources of this namespace (also what the stale-index sweep may delete). */
  namespace?: string;
  /** With a KubeConfig, controllers run only while this replica holds the Lease. */
  leaderElection?: { kc: KubeConfig; options: LeaderElectionOptions };
  /** How often the autoscaler reads the gateways' load reports (default 1 s). */
  autoscaleTickMs?: number;
  /** How often to check that Redis still holds the index (a flush or an empty restart). */
  indexCheckMs?: number;
  /** Workers per reconciler, by its name (`model`, `apikey`, `workflow-service`). */
  workers?: Partial<Record<string, number>>;
  /** How often each key's usage in Redis is copied into its ApiKey status (`kubectl get apikeys`). */
  usageSyncMs?: number;
  /** The MLServer image of Models that name none (default: MLServer's published images). */
  runtimeImage?: string;
  /** Where a Model's calls are checked when its spec does not say (default: central). */
  modelGateway?: ModelGateway;
  /**
   * The signing key (a Secret on a cluster, a key file standalone), shared with the central
   * gateways: every key index entry and route is sealed with it, and readers believe nothing else.
   */
  signingKey: () => Promise<StoredKey>;
}

/** Creates the sources for one leadership term (informers cannot be restarted after stop). */
export type SourcesFactory = () => OperatorSources;

export class OperatorManager {
  readonly metrics: OperatorMetrics;
  private readonly redis: Redis;
  private term: Term | undefined;
  private elector: LeaderElector | undefined;
  private starting: Promise<void> | undefined;

  constructor(
    private readonly makeSources: SourcesFactory,
    private readonly opts: OperatorOptions,
  ) {
    this.metrics = opts.metrics ?? new OperatorMetrics();
    // Fail fast while Redis is down: the reconcile errors and is retried with backoff.
    this.redis = connectRedis(opts.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      lazyConnect: true,
    });
    this.redis.on('error', (err) => opts.log.debug({ err }, 'redis'));
  }

  get isRunning(): boolean {
    return this.term !== undefined;
  }

  /** Resolves when controllers run (without leader election) or when campaigning has begun. */
  async start(): Promise<void> {
    await this.redis
      .connect()
      .catch((err: unknown) => this.opts.log.warn({ err }, 'Redis not reachable yet; retrying'));
    const le = this.opts.leaderElection;
    if (!le) {
      await this.startTerm();
      return;
    }
    this.elector = new LeaderElector(le.kc, le.options, this.opts.log, {
      onStartedLeading: () => {
        this.metrics.leader.set(1);
        this.starting = this.startTerm().catch((err: unknown) =>
          this.opts.log.error({ err }, 'could not start controllers'),
        );
      },
      onStoppedLeading: () => {
        this.metrics.leader.set(0);
        void this.stopTerm();
      },
    });
    this.elector.start();
  }

  /** Resolves once the first full rebuild of the index and routes is done (tests, readiness). */
  async synced(): Promise<void> {
    await this.starting;
    await this.term?.firstRebuild;
  }

  async stop(): Promise<void> {
    await this.elector?.stop();
    await this.stopTerm();
    this.redis.disconnect();
  }

  private async startTerm(): Promise<void> {
    const key = await this.opts.signingKey();
    if (this.term) return;
    const term = new Term(this.makeSources(), this.redis, this.opts, this.metrics, key);
    this.term = term;
    await term.start();
  }

  private async stopTerm(): Promise<void> {
    await this.starting;
    const term = this.term;
    this.term = undefined;
    await term?.stop();
  }
}

/** One leadership term: sources, controllers and the index watch, started and stopped together. */
class Term {
  firstRebuild: Promise<void> = Promise.resolve();
  private readonly controllers: Controller[];
  private readonly keyController: Controller;
  private readonly modelReconciler: ModelReconciler;
  private readonly keyReconciler: ApiKeyReconciler;
  private readonly serviceReconciler: WorkflowServiceReconciler;
  private readonly usage: UsageStatusSync;
  private readonly routes: RouteWriter;
  private readonly verifier: EntryVerifier;
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
  /** The last rebuild left its sweep for later (a reconcile was failing): the next check does it. */
  private sweepPending = false;
  /** An index check is waiting on Redis: the next tick does not pile another on it. */
  private checking = false;

  constructor(
    private readonly sources: OperatorSources,
    private readonly redis: Redis,
    private readonly opts: OperatorOptions,
    metrics: OperatorMetrics,
    signingKey: StoredKey,
  ) {
    const sealer = new EntrySealer(signingKey);
    this.verifier = EntryVerifier.forKey(signingKey);
    const routes = new RouteWriter(redis, sealer);
    this.routes = routes;
    const { log } = opts;
    const workflows = new WorkflowAdmission(sources.workflows);
    this.modelReconciler = new ModelReconciler({
      ...sources,
      workflows,
      routes,
      log,
      scaler: new Autoscaler({
        models: sources.models,
        redis,
        subscriber: redis.duplicate(),
        log,
        reports: new ReportChecker(signingKey),
        ...(opts.autoscaleTickMs === undefined ? {} : { tickMs: opts.autoscaleTickMs }),
      }),
      ...(opts.runtimeImage ? { runtimeImage: opts.runtimeImage } : {}),
      ...(opts.modelGateway ? { defaultGateway: opts.modelGateway } : {}),
    });
    this.keyReconciler = new ApiKeyReconciler(sources.apiKeys, new KeyIndexWriter(redis, sealer));
    this.serviceReconciler = new WorkflowServiceReconciler({
      services: sources.services,
      workflows,
      routes,
      address: sources.serviceAddress,
      events: sources.events,
      log,
    });
    // Each reconciler declares what it watches and owns (its `watches`); the manager only runs them.
    this.controllers = [this.modelReconciler, this.keyReconciler, this.serviceReconciler].map(
      (r) => new Controller(r, metrics, log, opts.workers?.[r.name]),
    );
    this.keyController = this.controllers[1]!;
    this.usage = new UsageStatusSync(sources.apiKeys, redis, log);
  }

  async start(): Promise<void> {
    const began = performance.now();
    await Promise.all(this.controllers.map((c) => c.watch()));
    this.opts.log.info({ ms: Math.round(performance.now() - began) }, 'caches synced');
    // Workers start only once every cache has synced (controller-runtime's WaitForCacheSync): a
    // Deployment event reconciled before the Model cache filled would take the Model for deleted
    // and tear down its route and Deployment. Events seen meanwhile wait in the queues. The keys'
    // workers wait for the first bulk write of the index (rebuild), which writes every entry in
    // batches: started now, they would write the same entries one transaction each beside it.
    for (const c of this.controllers) if (c !== this.keyController) c.start();
    // Tracked like any rebuild: the index check must not start a second one meanwhile.
    this.firstRebuild = this.rebuilding = this.rebuild().finally(() => (this.rebuilding = undefined));
    // Connected already: the next 'ready' is a reconnect.
    this.connectedBefore = this.redis.status === 'ready';
    this.redis.on('ready', this.onRedisReady);
    this.indexTimer = setInterval(() => void this.checkIndex(), this.opts.indexCheckMs ?? 1000);
    this.usage.start(this.opts.usageSyncMs ?? 30_000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.indexTimer);
    await this.usage.stop();
    this.redis.off('ready', this.onRedisReady);
    await Promise.all(this.controllers.map((c) => c.stop()));
    await Promise.all(this.controllers.map((c) => c.stopWatches()));
  }

  private async checkIndex(): Promise<void> {
    if (this.stopped || this.rebuilding || this.checking) return;
    const resync = this.resyncPending;
    this.checking = true;
    try {
      if (!resync && !this.sweepPending) {
        const built = await this.markerExists();
        // Built; or no answer, and the reconnect it forced resyncs once Redis is back.
        if (built !== false) return;
      }
    } catch {
      return; // Redis is down; checked again when it is back.
    } finally {
      this.checking = false;
    }
    this.resyncPending = false;
    if (resync) this.opts.log.warn('Redis reconnected (perhaps to a new primary); resyncing the index');
    else if (!this.sweepPending)
      this.opts.log.warn(
        'the Redis index is missing (flushed or restarted empty); rebuilding it from the resources',
      );
    this.rebuilding = this.rebuild().finally(() => (this.rebuilding = undefined));
  }

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

  /** Idle, with failed reconciles given their retries (bounded: a lasting failure stays failing). */
  private async settled(): Promise<void> {
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      await Promise.all(this.controllers.map((c) => c.idle()));
      if (this.stopped || Date.now() > deadline || !this.controllers.some((c) => c.failing > 0)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Reconciles everything, waits for the queues to drain, removes what no resource backs any more,
   * then marks the index as built, unless Redis lost data meanwhile (the build's token is gone):
   * then it is built again. The marker is never set over an index this build did not fill.
   */
  private async rebuild(): Promise<void> {
    this.sweepPending = false;
    const token = randomUUID();
    try {
      await this.redis.set(redisKeys.indexBuilding, token);
    } catch {
      this.resyncPending = true; // Redis is down: built again once it is back.
      return;
    }
    const began = performance.now();
    let keys = 0;
    // Every key entry, in bulk: those unchanged since written may be what Redis lost.
    try {
      keys = await this.keyReconciler.writeAll();
    } catch (err) {
      this.opts.log.warn({ err }, 'index rebuild interrupted: Redis failed during the bulk write; retrying');
      this.resyncPending = true;
      return;
    } finally {
      this.keyController.start();
    }
    // Routes are rewritten, not compared, so one whose seal was tampered with is repaired.
    this.routes.rewriteAll(true);
    const written = performance.now();
    for (const c of this.controllers) c.enqueueAll();
    await this.settled();
    const settled = performance.now();
    this.routes.rewriteAll(false);
    if (this.stopped) return;
    if (this.controllers.some((c) => c.failing > 0)) {
      // A route missing from liveRoutes() may belong to a reconcile that failed and waits for its
      // retry: sweeping now would cut traffic to a ready model. The next check sweeps instead.
      this.opts.log.warn('index rebuild postponed: some reconciles are failing and will be retried');
      this.sweepPending = true;
      return;
    }
    try {
      await sweepStaleRoutes(this.redis, this.verifier, this.opts.namespace, [
        ...this.modelReconciler.liveRoutes(),
        ...this.serviceReconciler.liveRoutes(),
      ]);
      if (this.opts.namespace !== undefined)
        await sweepStaleKeys(this.redis, this.verifier, this.sources.apiKeys, this.opts.namespace);
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
