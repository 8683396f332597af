import { LRUCache } from 'lru-cache';
import { growingLru } from '../common/growing-lru.js';
import type { Redis } from 'ioredis';
import type { Logger } from '../common/logger.js';

/**
 * The pub/sub side of the caches. In-process caches of the key index and the route table are
 * only as good as the invalidation messages behind them, so a cache is trusted only while its
 * subscription is known to be live:
 *
 * - The subscriber subscribes explicitly on every (re)connect and is "live" only once Redis has
 *   confirmed the subscription. Until then, and from the moment the connection drops, caches
 *   answer nothing and every lookup goes to Redis — which, if Redis is down, fails, so the
 *   request gets 503 `redis_unavailable` (fail closed). A cached grant never outlives the
 *   channel that could revoke it.
 * - Every transition clears the caches, since messages sent while we were away are lost.
 * - A socket that stays open while Redis stops answering (a partition, a frozen server) would
 *   never report a drop, so the subscriber is pinged every `heartbeatMs`; a missed pong tears
 *   the connection down, which makes it not live, and reconnects. A frozen Redis therefore lets
 *   cached grants pass for at most two heartbeats (the ping's interval and its deadline).
 * - A Redis flushed (or restarted empty) under a live connection sends no message either: with
 *   `watchIndex`, each heartbeat also reads the operator's index marker on the command
 *   connection, and any change of it (gone, or rewritten by a rebuild) clears the caches as a lost
 *   connection does.
 */
export class CacheInvalidation {
  private liveNow = false;
  private started = false;
  private readonly handlers = new Map<string, Array<(message: string) => void>>();
  private readonly resets: Array<() => void> = [];
  private heartbeat: NodeJS.Timeout | undefined;
  private indexProbe: (() => Promise<string | null>) | undefined;
  /** The index marker's value at the last check; undefined before the first. */
  private indexSeen: string | null | undefined;

  constructor(
    private readonly subscriber: Redis,
    private readonly log: Logger,
    private readonly heartbeatMs = 1_000,
  ) {
    // Only once started: before, channels are still being registered, and a subscription to some
    // of them would call the caches live while the others' messages go unheard.
    subscriber.on('ready', () => {
      if (this.started) void this.subscribe();
    });
    const down = (): void => this.setLive(false);
    subscriber.on('close', down);
    subscriber.on('end', down);
    subscriber.on('reconnecting', down);
    subscriber.on('error', (err: Error) => this.log.warn({ err: err.message }, 'redis subscriber error'));
    subscriber.on('message', (channel: string, message: string) => {
      for (const handler of this.handlers.get(channel) ?? []) handler(message);
    });
  }

  get live(): boolean {
    return this.liveNow;
  }

  /** Registers a channel's handler; call before `start`. */
  on(channel: string, handler: (message: string) => void): void {
    const list = this.handlers.get(channel) ?? [];
    list.push(handler);
    this.handlers.set(channel, list);
  }

  /** Called whenever caches must be dropped (subscription lost or regained). */
  onReset(reset: () => void): void {
    this.resets.push(reset);
  }

  /**
   * Clears the caches whenever `probe` (the index marker's value, written by the operator after
   * each full rebuild) changes: Redis lost its data while the subscription stayed up, whether the
   * marker is still missing or already rewritten by a rebuild quicker than one heartbeat.
   */
  watchIndex(probe: () => Promise<string | null>): void {
    this.indexProbe = probe;
  }

  start(): void {
    this.started = true;
    if (this.subscriber.status === 'ready') void this.subscribe();
    void this.checkIndex();
    this.heartbeat = setInterval(() => this.ping(), this.heartbeatMs);
    this.heartbeat.unref();
  }

  stop(): void {
    this.started = false;
    clearInterval(this.heartbeat);
    this.setLive(false);
  }

  private async subscribe(): Promise<void> {
    try {
      await this.subscriber.subscribe(...this.handlers.keys());
      // Stopped while the subscription was on its way: the caches stay off.
      if (this.started) this.setLive(true);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'redis subscribe failed; caches stay off');
    }
  }

  private ping(): void {
    void this.checkIndex();
    if (!this.liveNow) return;
    const timer = setTimeout(() => {
      this.log.warn('redis subscriber missed a heartbeat; reconnecting');
      this.setLive(false);
      this.subscriber.disconnect(true);
    }, this.heartbeatMs);
    timer.unref();
    this.subscriber.ping().then(
      () => clearTimeout(timer),
      () => undefined,
    );
  }

  private async checkIndex(): Promise<void> {
    if (this.indexProbe === undefined) return;
    let marker: string | null;
    try {
      marker = await this.indexProbe();
    } catch {
      return; // Redis is away: the connection's own events handle that.
    }
    if (this.indexSeen !== undefined && marker !== this.indexSeen) {
      this.log.warn(
        { marker },
        'the Redis index was lost or rebuilt (flushed or restarted empty): caches cleared',
      );
      for (const reset of this.resets) reset();
    }
    this.indexSeen = marker;
  }

  private setLive(live: boolean): void {
    if (this.liveNow === live && !live) return;
    this.liveNow = live;
    for (const reset of this.resets) reset();
  }
}

/**
 * An LRU that only answers while its invalidation channel is live. `set` takes the epoch read
 * before the Redis lookup began: if an invalidation arrived in between, the (possibly stale)
 * result is not cached.
 */
export class InvalidatedCache<V extends object> {
  private readonly lru: LRUCache<string, V>;
  private epochNow = 0;

  constructor(
    private readonly invalidation: CacheInvalidation,
    private readonly opts: {
      max: number;
      ttlMs?: number;
      onDrop?: (value: V) => void;
      /**
       * Values of very different sizes: held to `maxBytes` in all as well as to `max` values (each
       * counts as at least `maxBytes / max`).
       */
      weigh?: { maxBytes: number; maxEntryBytes?: number; bytesOf: (value: V) => number };
    },
  ) {
    const dispose = opts.onDrop === undefined ? {} : { dispose: opts.onDrop };
    const expiry = opts.ttlMs === undefined ? dispose : { ttl: opts.ttlMs, ttlAutopurge: false, ...dispose };
    const { weigh } = opts;
    this.lru =
      weigh === undefined
        ? growingLru<string, V>(opts.max, expiry)
        : new LRUCache<string, V>({
            ...expiry,
            maxSize: weigh.maxBytes,
            sizeCalculation: (v) =>
              Math.max(Math.ceil(weigh.maxBytes / opts.max), Math.ceil(weigh.bytesOf(v))),
          });
    invalidation.onReset(() => this.clear());
  }

  get epoch(): number {
    return this.epochNow;
  }

  get(key: string): V | undefined {
    return this.invalidation.live ? this.lru.get(key) : undefined;
  }

  /** Whether the value was cached (not when a change came, or the channel fell, since the lookup). */
  set(key: string, value: V, epochAtLookup: number): boolean {
    if (!this.invalidation.live || epochAtLookup !== this.epochNow) return false;
    // A value past its largest is not kept at all, rather than pushing out many others.
    const { weigh } = this.opts;
    if (weigh?.maxEntryBytes !== undefined && weigh.bytesOf(value) > weigh.maxEntryBytes) return false;
    this.lru.set(key, value);
    return true;
  }

  /**
   * Something changed: no lookup begun before now is cached, and `key`'s value, when one is named
   * and held, is dropped.
   */
  delete(key: string | undefined): void {
    this.epochNow++;
    if (key !== undefined) this.lru.delete(key);
  }

  clear(): void {
    this.epochNow++;
    this.lru.clear();
  }
}
