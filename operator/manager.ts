/**
 * The operator's manager (controller-runtime's): runs the Runnables it is given, those that need
 * the lease only while this replica leads, and for each term the reconcilers `setupTerm`
 * (setup.ts) lists, each under a Controller, with the index keeper (index-keeper.ts). It names no
 * reconciler and reads none of their state.
 *
 * THE SEAM (standalone mode). Everything the controllers touch outside Redis comes in through
 * `OperatorSources`:
 *   - `models`, `apiKeys`: ResourceSource (list + watch + fresh read + status/finalizer writes),
 *   - `identities`: WatchedSource of Identities (their limits go into their keys' index entries),
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
import type { KubeConfig } from '@kubernetes/client-node';
import { connectRedis } from '../common/redis/connect.js';
import type { Redis } from 'ioredis';
import type { Logger } from '../common/logger.js';
import type { Tracer } from '@opentelemetry/api';
import type { Model } from '../common/resources/model.js';
import type { ApiKeyResource, IdentityResource } from './controllers/apikey-controller.js';
import { Controller } from './framework/controller.js';
import type { ServiceAddress } from './controllers/workflow-service-controller.js';
import type { WorkflowService } from '../common/resources/workflow-service.js';
import type { Workflow } from '../common/resources/workflow.js';
import type { EventRecorder } from './events.js';
import { LeaderElector, type LeaderElectionOptions } from './framework/leader-election.js';
import type { Runnable } from './framework/runnable.js';
import { OperatorMetrics } from './metrics.js';
import { IndexKeeper } from './index-keeper.js';
import { setupTerm } from './setup.js';
import { RouteWriter } from '../common/routes/workflow-routes.js';
import type { RuntimeDriver } from './serving/runtime-driver.js';
import type { ResourceSource, WatchedSource } from './framework/resource-source.js';
import type { CredentialsResolver } from './storage/credentials.js';
import type { StoredKey } from '../common/crypto/key-file.js';
import { EntrySealer, EntryVerifier } from '../common/redis/sealed-entry.js';
import type { ModelGateway } from '../common/resources/model.js';
import type { RouteHold } from './route-hold.js';
import type { SidecarPlacement } from './webhook/sidecar-placement.js';

export interface OperatorSources {
  models: ResourceSource<Model>;
  apiKeys: ResourceSource<ApiKeyResource>;
  /** Identities: their limits go into the index entries of their keys. */
  identities: WatchedSource<IdentityResource>;
  services: WatchedSource<WorkflowService>;
  /** Keeps a routed Service's cluster IP until its route is gone (a finalizer; none in standalone). */
  routeHold: RouteHold;
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
  /** OpenTelemetry's tracer, when traces are asked for: each reconcile is a span. */
  tracer?: Tracer;
  metrics?: OperatorMetrics;
  /** Only Models and workflow Services of this namespace (and its keys, unless `keysNamespace`). */
  namespace?: string;
  /**
   * Where ApiKeys are believed (the sources watch them there): the stale-index sweep keeps only
   * their entries. Unset: `namespace`.
   */
  keysNamespace?: string;
  /** With a KubeConfig, controllers run only while this replica holds the Lease. */
  leaderElection?: { kc: KubeConfig; options: LeaderElectionOptions };
  /** How often the autoscaler reads the gateways' load reports (default 1 s). */
  autoscaleTickMs?: number;
  /** How often to check that Redis still holds the index (a flush or an empty restart). */
  indexCheckMs?: number;
  /** Workers per reconciler, by its name (`model`, `apikey`, `workflow-service`). */
  workers?: Partial<Record<string, number>>;
  /**
   * How long a term waits for its caches to sync before it gives up and starts again (default 2 min,
   * controller-runtime's CacheSyncTimeout): a cache that cannot list (its RBAC missing after an
   * upgrade) would otherwise hold the Lease with nothing running, and the process unstoppable.
   */
  cacheSyncTimeoutMs?: number;
  /** How often each key's usage in Redis is copied into its ApiKey status (`kubectl get apikeys`). */
  usageSyncMs?: number;
  /** The MLServer image of Models that name none (default: MLServer's published images). */
  runtimeImage?: string;
  /** Where a Model's calls are checked when its spec does not say (default: central). */
  modelGateway?: ModelGateway;
  /** Why a namespace's Models could get no sidecar (on a cluster; standalone, none is refused). */
  sidecarPlacement?: SidecarPlacement;
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
  private readonly runnables: Runnable[] = [];
  private term: Term | undefined;
  private elector: LeaderElector | undefined;
  /**
   * Every term's start and stop, one after the other: a Lease lost and won back while a term still
   * starts must not start a second beside it.
   */
  private lifecycle: Promise<void> = Promise.resolve();
  /** Bumped when this replica stops leading: a start begun before then gives its term up. */
  private generation = 0;
  /** Cuts the start of the term under way (its caches' sync) when the Lease is lost or the process stops. */
  private starting: AbortController | undefined;
  private markBuilt: () => void = () => undefined;
  /** Settles once this replica has built the index for the first time (never, if it never leads). */
  readonly firstBuild = new Promise<void>((resolve) => (this.markBuilt = resolve));

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

  /**
   * Runs `r` with the operator: from `start` to `stop` on every replica, or, when it needs the
   * lease, for each term this replica leads. Add before `start`.
   */
  add(r: Runnable): void {
    this.runnables.push(r);
  }

  get isRunning(): boolean {
    return this.term !== undefined;
  }

  /** Resolves when controllers run (without leader election) or when campaigning has begun. */
  async start(): Promise<void> {
    // First, and whatever Redis does: the webhook and the health port do not wait for it.
    for (const r of this.runnables) if (!r.needsLeader) await r.start();
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
        const generation = this.generation;
        void this.next(() => this.startTermWhileLeading(generation));
      },
      onStoppedLeading: () => {
        this.metrics.leader.set(0);
        this.generation++;
        this.starting?.abort();
        void this.next(() => this.stopTerm());
      },
    });
    this.elector.start();
  }

  /** Resolves once the first full rebuild of the index and routes is done (tests, readiness). */
  async synced(): Promise<void> {
    await this.lifecycle;
    await this.term?.index.firstRebuild;
  }

  async stop(): Promise<void> {
    await this.elector?.stop();
    this.generation++;
    this.starting?.abort();
    await this.next(() => this.stopTerm());
    for (const r of this.runnables) if (!r.needsLeader) await r.stop();
    this.redis.disconnect();
  }

  private async startTerm(generation = this.generation): Promise<void> {
    const key = await this.opts.signingKey();
    if (this.term || generation !== this.generation) return;
    const leading = this.runnables.filter((r) => r.needsLeader);
    const term = new Term(this.makeSources(), this.redis, this.opts, this.metrics, key, leading);
    const starting = new AbortController();
    this.starting = starting;
    try {
      await term.start(starting.signal);
    } catch (err) {
      await term.stop().catch(() => undefined);
      // Cut because the Lease was lost or the process stops: not a failure to retry.
      if (generation !== this.generation) return;
      throw err;
    } finally {
      if (this.starting === starting) this.starting = undefined;
    }
    // The Lease was lost while it started: it is not this replica's to run.
    if (generation !== this.generation) {
      await term.stop();
      return;
    }
    this.term = term;
    void term.index.firstRebuild.then(this.markBuilt);
  }

  /**
   * A leader whose term cannot start (the signing key unreadable, a cache that cannot sync) tries
   * again with backoff for as long as it holds the Lease: giving up would leave the Lease held and
   * nothing reconciled until this replica lost it.
   */
  private async startTermWhileLeading(generation: number): Promise<void> {
    const leading = () => generation === this.generation && this.elector?.isLeader === true;
    for (let delayMs = 500; leading(); delayMs = Math.min(delayMs * 2, 10_000)) {
      try {
        await this.startTerm(generation);
        return;
      } catch (err) {
        this.metrics.termStartFailures.inc();
        this.opts.log.error({ err, retryInMs: delayMs }, 'could not start controllers; retrying');
      }
      const until = performance.now() + delayMs;
      while (leading() && performance.now() < until)
        await new Promise((r) => setTimeout(r, Math.min(250, delayMs)));
    }
  }

  /** Queues a term's start or stop after the others; one that fails is logged, and the next runs. */
  private next(step: () => Promise<void>): Promise<void> {
    this.lifecycle = this.lifecycle
      .then(step)
      .catch((err: unknown) =>
        this.opts.log.error({ err }, 'a leadership term did not start or stop cleanly'),
      );
    return this.lifecycle;
  }

  /** Runs only in `lifecycle`, after any start begun before it. */
  private async stopTerm(): Promise<void> {
    const term = this.term;
    this.term = undefined;
    await term?.stop();
  }
}

/**
 * One leadership term: its sources, the controllers of the reconcilers `setupTerm` lists, the index
 * keeper and whatever else needs the lease, started and stopped together.
 */
class Term {
  readonly index: IndexKeeper;
  private readonly controllers: Controller[];
  private readonly runnables: Runnable[];

  constructor(
    sources: OperatorSources,
    redis: Redis,
    private readonly opts: OperatorOptions,
    metrics: OperatorMetrics,
    signingKey: StoredKey,
    leading: Runnable[],
  ) {
    const sealer = new EntrySealer(signingKey);
    const verifier = EntryVerifier.forKey(signingKey);
    const routes = new RouteWriter(redis, sealer);
    const { reconcilers, runnables } = setupTerm({
      sources,
      redis,
      sealer,
      verifier,
      routes,
      signingKey,
      opts,
    });
    // Each reconciler declares what it watches and owns (its `watches`); the manager only runs them.
    this.controllers = reconcilers.map(
      (r) => new Controller(r, metrics, opts.log, opts.workers?.[r.name], opts.tracer),
    );
    this.index = new IndexKeeper(redis, this.controllers, routes, verifier, {
      log: opts.log,
      ...(opts.namespace === undefined ? {} : { namespace: opts.namespace }),
      ...(opts.indexCheckMs === undefined ? {} : { indexCheckMs: opts.indexCheckMs }),
    });
    this.runnables = [...runnables, ...leading];
  }

  /** Rejects when the caches do not sync in time, or `signal` cuts the start; `stop()` then cleans up. */
  async start(signal: AbortSignal): Promise<void> {
    const began = performance.now();
    const timeoutMs = this.opts.cacheSyncTimeoutMs ?? 120_000;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const synced = Promise.all(this.controllers.map((c) => c.watch()));
    // A sync given up on may still fail later, with nobody waiting for it.
    synced.catch(() => undefined);
    try {
      await Promise.race([
        synced,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`the caches did not sync within ${timeoutMs / 1000} s`)),
            timeoutMs,
          );
          onAbort = () => reject(new Error('the term was stopped while its caches synced'));
          signal.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
    }
    signal.throwIfAborted();
    this.opts.log.info({ ms: Math.round(performance.now() - began) }, 'caches synced');
    // Workers start only once every cache has synced (controller-runtime's WaitForCacheSync): a
    // Deployment event reconciled before the Model cache filled would take the Model for deleted
    // and tear down its route and Deployment. Events seen meanwhile wait in the queues. Those of a
    // reconciler with a bulk write (the keys') wait for the index keeper's first one: started now,
    // they would write the same entries one transaction each beside it.
    for (const c of this.controllers) if (c.reconciler.writeAll === undefined) c.start();
    await this.index.start();
    for (const r of this.runnables) await r.start();
  }

  async stop(): Promise<void> {
    await this.index.stop();
    for (const r of this.runnables) await r.stop();
    await Promise.all(this.controllers.map((c) => c.stop()));
    await Promise.all(this.controllers.map((c) => c.stopWatches()));
  }
}
