import type { Logger } from '../../common/logger.js';
import { API_KEY_FINALIZER } from '../../common/resources/apikey.js';
import type { Runnable } from '../framework/runnable.js';
import {
  isConflict,
  GoneError,
  parseRefKey,
  type Resource,
  type ResourceSource,
} from '../framework/resource-source.js';
import { withConflictRetry } from '../framework/controller.js';

/** Finalizer patches in flight at once: the API server's write rate is shared with everyone. */
const IN_FLIGHT = 16;
/**
 * A patch the API server refused (not a conflict, not gone) is tried again after 5 s, doubling for
 * each refusal of the same key up to 5 minutes: a policy that refuses every key costs the API
 * server little, and the log one line per interval.
 */
const RETRY_MS = 5_000;
const RETRY_MAX_MS = 300_000;
const WARN_EVERY_MS = 30_000;
/** How long stopping waits for the patches in flight (each bounded by the client's own timeout). */
const STOP_WAIT_MS = 10_000;

/**
 * Puts the operator's finalizer on ApiKeys that arrived without it (`kubectl apply`, Argo CD, Flux),
 * in the background, a bounded number at a time. A key's entry is written before it is handed here
 * (by the index build in bulk, or by its reconcile), so a key works as soon as the operator has
 * listed it; the finalizer only makes sure a later deletion waits for the entry to go. A key deleted
 * before its finalizer lands is removed by the informer's delete event, or by the start-up sweep
 * when the operator was down: nothing here is needed for that.
 *
 * One pending ref per key (a set): 100,000 keys applied at once are 100,000 short strings, not
 * 100,000 reconciles holding copies of their objects.
 */
export class KeyFinalizers<T extends Resource> implements Runnable {
  readonly name = 'apikey-finalizers';
  readonly needsLeader = true;
  private readonly pending = new Set<string>();
  private readonly retries = new Set<NodeJS.Timeout>();
  /** Refusals so far of each key still refused, for its backoff. */
  private readonly refusals = new Map<string, number>();
  private refusedSinceWarning = 0;
  private warnedAt = -Infinity;
  private running = 0;
  private active = false;
  private added = 0;
  private firstAt: number | undefined;

  constructor(
    private readonly keys: ResourceSource<T>,
    private readonly log: Logger,
    private readonly inFlight = IN_FLIGHT,
  ) {}

  async start(): Promise<void> {
    this.active = true;
    this.pump();
  }

  async stop(): Promise<void> {
    this.active = false;
    for (const t of this.retries) clearTimeout(t);
    this.retries.clear();
    this.pending.clear();
    this.refusals.clear();
    const deadline = performance.now() + STOP_WAIT_MS;
    while (this.running > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  }

  /** Keys still waiting for their finalizer (tests, the bench's log line). */
  get waiting(): number {
    return this.pending.size + this.running;
  }

  /** Hands a key (`namespace/name`) over; once per key however often it is handed. */
  add(key: string): void {
    if (this.firstAt === undefined) this.firstAt = performance.now();
    this.pending.add(key);
    this.pump();
  }

  private pump(): void {
    if (!this.active) return;
    while (this.running < this.inFlight && this.pending.size > 0) {
      const key = this.pending.values().next().value as string;
      this.pending.delete(key);
      this.running++;
      void this.patch(key).finally(() => {
        this.running--;
        this.pump();
        if (this.waiting === 0 && this.retries.size === 0 && this.firstAt !== undefined) this.drained();
      });
    }
  }

  private drained(): void {
    const ms = Math.round(performance.now() - (this.firstAt ?? 0));
    if (this.added > 0) this.log.info({ added: this.added, ms }, 'key finalizers added');
    this.added = 0;
    this.firstAt = undefined;
  }

  private async patch(key: string): Promise<void> {
    const ref = parseRefKey(key);
    const cached = this.keys.get(ref);
    // Gone, being deleted (the API server takes no new finalizer then), or under it already.
    if (cached === undefined || cached.metadata.deletionTimestamp || hasFinalizer(cached)) return;
    try {
      const done = await withConflictRetry(
        cached,
        () => this.keys.read(ref),
        (k) =>
          k.metadata.deletionTimestamp || hasFinalizer(k)
            ? Promise.resolve(k)
            : this.keys.updateFinalizers(k, [...(k.metadata.finalizers ?? []), API_KEY_FINALIZER]),
        isConflict,
      );
      if (done !== undefined) this.added++;
      this.refusals.delete(key);
    } catch (err) {
      if (err instanceof GoneError) return;
      // Refused (an admission policy, the API server busy): tried again later, never in a loop.
      const refused = (this.refusals.get(key) ?? 0) + 1;
      this.refusals.set(key, refused);
      const retryInMs = Math.min(RETRY_MS * 2 ** (refused - 1), RETRY_MAX_MS);
      this.refusedSinceWarning++;
      if (performance.now() - this.warnedAt >= WARN_EVERY_MS) {
        this.log.warn(
          { err, key, refused: this.refusedSinceWarning, retryInMs },
          'could not put the finalizer on ApiKeys; will retry (their entries are written: the keys work)',
        );
        this.warnedAt = performance.now();
        this.refusedSinceWarning = 0;
      }
      const timer = setTimeout(() => {
        this.retries.delete(timer);
        if (this.active) this.add(key);
      }, retryInMs);
      this.retries.add(timer);
    }
  }
}

const hasFinalizer = (k: Resource): boolean => (k.metadata.finalizers ?? []).includes(API_KEY_FINALIZER);
