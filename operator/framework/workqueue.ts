/**
 * A work queue in the manner of client-go's: keys (namespace/name), never objects, so a burst of
 * changes to one resource is one reconcile of its latest state (level-triggered). A key is never
 * processed by two workers at once; a key added while in flight is processed again after. Failed
 * keys come back after a per-key exponential backoff, bounded, reset by `forget` on success.
 */
export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export class WorkQueue {
  /** FIFO from `head` on: Array#shift moves every element, quadratic over 100,000 keys. */
  private queue: string[] = [];
  private head = 0;
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  /** Keys added while processing: re-queued when `done`. */
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(opts: WorkQueueOptions = {}) {
    this.baseDelayMs = opts.baseDelayMs ?? 50;
    this.maxDelayMs = opts.maxDelayMs ?? 60_000;
  }

  get length(): number {
    return this.queue.length - this.head;
  }

  /** Keys queued or being processed (delayed retries not counted). */
  get busy(): number {
    return this.length + this.processing.size;
  }

  /** Keys whose last reconcile failed and that wait for their retry. */
  get failing(): number {
    return this.failures.size;
  }

  /** Whether `key` waits, runs, or failed last time (a route of its resource is not yet settled). */
  unsettled(key: string): boolean {
    return this.queued.has(key) || this.processing.has(key) || this.failures.has(key);
  }

  add(key: string): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.processing.add(key);
      waiter(key);
      return;
    }
    this.queued.add(key);
    this.queue.push(key);
  }

  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (this.timers.has(key)) return;
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        this.add(key);
      }, delayMs),
    );
  }

  /** Re-adds a failed key after 2^failures × base delay, capped. */
  addRateLimited(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** n);
    this.addAfter(key, delay);
    return delay;
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  /** The next key, or undefined once shut down. Call `done(key)` after processing it. */
  get(): Promise<string | undefined> {
    const key = this.queue[this.head];
    if (key !== undefined) {
      this.head++;
      if (this.head === this.queue.length) {
        this.queue = [];
        this.head = 0;
      } else if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      this.queued.delete(key);
      this.processing.add(key);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) this.add(key);
  }

  shutDown(): void {
    this.shuttingDown = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}
