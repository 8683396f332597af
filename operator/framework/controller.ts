import type { Logger } from '../../common/logger.js';
import type { Tracer } from '@opentelemetry/api';
import { CallTrace, ROOT_CONTEXT, runAsCall, SpanKind } from '../../common/tracing/call-trace.js';
import type { OperatorMetrics } from '../metrics.js';
import { refKey, type Resource, type ResourceRef, type WatchedSource } from './resource-source.js';
import { WorkQueue } from './workqueue.js';

export type ReconcileResult = { requeueAfterMs?: number } | undefined;

/** Objects a reconciler owns: a change to one of them enqueues its owner. */
export interface OwnedSource {
  start(onChange: (owner: ResourceRef) => void): Promise<void>;
  stop(): Promise<void>;
}

/**
 * What a reconciler watches, declared by the reconciler itself (controller-runtime's
 * `For`/`Owns`): adding a reconciler touches its own file, not the manager's wiring.
 */
export interface Watches<T extends Resource = Resource> {
  /** The primary resource: any change enqueues its key; a deletion is also told to onDeleted. */
  for: WatchedSource<T>;
  /** Which updates of the primary resource enqueue it (an event filter; framework/predicates.ts). */
  changed?(before: T, after: T): boolean;
  // Method syntax: a reconciler of one kind is still a Reconciler (bivariant parameter).
  onDeleted?(ref: ResourceRef, gone: T): void;
  owns?: OwnedSource[];
  /** Reconciles run in parallel (different keys only). */
  workers: number;
}

/** Brings one resource (by `namespace/name` key) to its desired state. Must be idempotent. */
export interface Reconciler {
  readonly name: string;
  readonly watches: Watches;
  reconcile(key: string): Promise<ReconcileResult>;
  /**
   * Its part of an index rebuild (operator/index-keeper.ts), for a reconciler whose entries are
   * many and alike: writes every one in bulk (Redis may have lost them) and resolves with the
   * count. Its workers start only after the first, so they do not write the same entries one by
   * one beside it.
   */
  writeAll?(): Promise<number>;
  /** The Redis routes its resources back now: a rebuild's sweep removes routes no one backs. */
  liveRoutes?(): Iterable<string>;
  /** The queue key of the resource a route's `source` names, if it is one of its kind. */
  keyOf?(source: string): string | undefined;
  /** Removes entries of its kind that no resource backs (after a rebuild's reconciles settled). */
  sweepStale?(): Promise<number>;
}

/**
 * Runs a reconciler over its work queue with a few workers: errors are logged, counted and retried
 * with the queue's bounded exponential backoff; success resets the backoff.
 */
export class Controller {
  readonly queue: WorkQueue;
  private workers: Promise<void>[] = [];
  private idleWaiters: Array<() => void> = [];

  private readonly concurrency: number;

  constructor(
    readonly reconciler: Reconciler,
    private readonly metrics: OperatorMetrics,
    private readonly log: Logger,
    concurrency?: number,
    private readonly tracer?: Tracer,
  ) {
    this.queue = new WorkQueue();
    this.concurrency = concurrency ?? reconciler.watches.workers;
  }

  /** Starts the reconciler's watches; resolves once their caches have synced. */
  async watch(): Promise<void> {
    const { for: primary, onDeleted, changed, owns = [] } = this.reconciler.watches;
    await Promise.all([
      primary.start(
        (ref, gone) => {
          if (gone) onDeleted?.(ref, gone);
          this.enqueue(refKey(ref));
        },
        changed === undefined ? {} : { changed: (before, after) => changed(before, after) },
      ),
      ...owns.map((o) => o.start((owner) => this.enqueue(refKey(owner)))),
    ]);
  }

  /** Enqueues every primary resource the cache holds (a full rebuild). */
  enqueueAll(): void {
    for (const obj of this.reconciler.watches.for.list())
      this.enqueue(refKey({ namespace: obj.metadata.namespace ?? '', name: obj.metadata.name }));
  }

  async stopWatches(): Promise<void> {
    const { for: primary, owns = [] } = this.reconciler.watches;
    await Promise.all([primary.stop(), ...owns.map((o) => o.stop())]);
  }

  get name(): string {
    return this.reconciler.name;
  }

  enqueue(key: string): void {
    this.queue.add(key);
    this.metrics.queueDepth.set({ controller: this.name }, this.queue.length);
  }

  /** Starts the workers (once: a second call does nothing). */
  start(): void {
    if (this.workers.length > 0) return;
    this.workers = Array.from({ length: this.concurrency }, () => this.work());
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.workers);
  }

  /** Resolves when nothing is queued or being reconciled (delayed retries excepted). */
  idle(): Promise<void> {
    if (this.queue.busy === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Keys whose last reconcile failed, waiting for a delayed retry. */
  get failing(): number {
    return this.queue.failing;
  }

  /** A reconcile's span (its logs carry its trace id), when tracing is on. */
  private span(key: string): CallTrace | undefined {
    if (this.tracer === undefined) return undefined;
    const span = new CallTrace(this.tracer, `reconcile ${this.name}`, SpanKind.INTERNAL, ROOT_CONTEXT);
    const slash = key.indexOf('/');
    span.set({
      'tollgate.controller': this.name,
      ...(slash < 0
        ? { 'k8s.object.name': key }
        : { 'k8s.namespace.name': key.slice(0, slash), 'k8s.object.name': key.slice(slash + 1) }),
    });
    return span.begin();
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      this.metrics.queueDepth.set({ controller: this.name }, this.queue.length);
      const end = this.metrics.reconcileDuration.startTimer({ controller: this.name });
      const span = this.span(key);
      try {
        const result = await runAsCall(span, () => this.reconciler.reconcile(key));
        span?.set({
          'tollgate.reconcile.result': result?.requeueAfterMs === undefined ? 'success' : 'requeue',
        });
        span?.end(undefined);
        this.queue.forget(key);
        if (result?.requeueAfterMs !== undefined) {
          this.queue.addAfter(key, result.requeueAfterMs);
          this.metrics.reconciles.inc({ controller: this.name, result: 'requeue' });
        } else {
          this.metrics.reconciles.inc({ controller: this.name, result: 'success' });
        }
      } catch (err) {
        const code = (err as { code?: unknown } | null)?.code;
        span?.end(undefined, typeof code === 'string' ? code : 'reconcile_failed');
        const delay = this.queue.addRateLimited(key);
        this.metrics.reconciles.inc({ controller: this.name, result: 'error' });
        this.metrics.reconcileErrors.inc({ controller: this.name });
        this.log.warn({ err, controller: this.name, key, retryInMs: delay }, 'reconcile failed; will retry');
      } finally {
        end();
        this.queue.done(key);
        if (this.queue.busy === 0) for (const w of this.idleWaiters.splice(0)) w();
      }
    }
  }
}

/**
 * Runs `write` against the latest object, reading it afresh after a 409 conflict: the write is
 * recomputed from current state rather than forced over someone else's change.
 */
export async function withConflictRetry<T>(
  current: T,
  read: () => Promise<T | undefined>,
  write: (latest: T) => Promise<T>,
  isConflict: (e: unknown) => boolean,
  attempts = 5,
): Promise<T | undefined> {
  let latest: T | undefined = current;
  for (let i = 1; ; i++) {
    try {
      return await write(latest);
    } catch (e) {
      if (!isConflict(e) || i >= attempts) throw e;
      latest = await read();
      if (latest === undefined) return undefined;
    }
  }
}
