import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { Webhook } from '../../common/resources/webhook.js';
import { outsideCall } from '../../common/tracing/call-trace.js';
import type { AdminRights } from '../webhooks/admin-rights.js';
import type { DeliveryQueue } from '../webhooks/deliveries.js';
import type { WebhookStore } from '../webhooks/store.js';
import { toCloudEvent, USAGE_WEBHOOK_EVENT } from './cloud-events.js';
import { cursorAt, keptFrom, readRecords, STREAM_ID } from './records.js';

/** Events per message at most, and stream entries read per step (an owner's endpoint skips the others'). */
const BATCH = 500;
const READ = 2_000;
const LOCK_MS = 30_000;

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/**
 * Sends the usage stream to the endpoints that ask for `usage.minute`, through the webhook
 * deliveries (Standard Webhooks signatures, the retry schedule, the delivery log): each endpoint
 * has its place in the stream, and one message in flight at a time, holding the events after it.
 * The place moves on only once that message is delivered; one that failed for good is sent again
 * (its retries afresh), one that is gone is rebuilt from the place. So an endpoint down for a
 * while, even past its retries, loses nothing the stream still keeps; a message may arrive twice
 * (the same events, the same ids), never with a gap. An endpoint hears its owner's keys' usage, or
 * (allOwners, while its creator is an administrator) everyone's.
 */
export class UsagePusher {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly token = randomBytes(12).toString('hex');

  constructor(
    private readonly s: {
      redis: Redis;
      store: Pick<WebhookStore, 'list'>;
      queue: Pick<DeliveryQueue, 'enqueue' | 'status' | 'replay'>;
      admins: Pick<AdminRights, 'holding'>;
      /** Polls the deliveries at once, so a new message goes out without waiting for the next tick. */
      sendNow: () => void;
      /** The CloudEvents source (usageExportSource). */
      source: string;
      log: Logger;
    },
    private readonly everyMs: number,
  ) {}

  start(): void {
    this.timer = outsideCall(() => setInterval(() => void this.push(), this.everyMs));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass over the endpoints that ask for usage (never throws). */
  push(nowMs = Date.now()): Promise<void> {
    this.running ??= this.pass(nowMs)
      .catch((err: unknown) =>
        this.s.log.warn({ err: (err as Error).message }, 'usage not pushed to webhooks this time (Redis?)'),
      )
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(nowMs: number): Promise<void> {
    const endpoints = (await this.s.store.list()).filter((w) =>
      (w.spec.events as readonly string[]).includes(USAGE_WEBHOOK_EVENT),
    );
    if (endpoints.length === 0) return;
    const lock = redisKeys.usageExportPushLock;
    if ((await this.s.redis.set(lock, this.token, 'PX', LOCK_MS, 'NX')) !== 'OK') return;
    try {
      const all = endpoints.filter((w) => w.spec.allOwners === true);
      const holding =
        all.length === 0
          ? new Set<string>()
          : await this.s.admins.holding([...new Set(all.map((w) => w.spec.owner))]);
      let sent = false;
      for (const w of endpoints) {
        const everyone = w.spec.allOwners === true && holding.has(w.spec.owner);
        sent = (await this.step(w, everyone, nowMs)) || sent;
      }
      if (sent) this.s.sendNow();
    } finally {
      await this.s.redis.eval(RELEASE, 1, lock, this.token);
    }
  }

  /** Moves one endpoint on: its message's outcome, then the next events; whether a message was queued. */
  private async step(w: Webhook, everyone: boolean, nowMs: number): Promise<boolean> {
    const name = w.metadata.name;
    const key = redisKeys.usageExportPush(name);
    const state = await this.s.redis.hgetall(key);
    let cursor = STREAM_ID.test(state.cursor ?? '') ? (state.cursor as string) : undefined;
    if (cursor === undefined) {
      // A new endpoint hears of usage from when it was made on.
      const created = Date.parse(String(w.metadata.creationTimestamp ?? ''));
      cursor = cursorAt(Number.isNaN(created) ? nowMs : created);
      await this.s.redis.hset(key, 'cursor', cursor);
    }
    if (state.message !== undefined && state.message !== '') {
      const status = await this.s.queue.status(name, state.message);
      if (status === 'pending') return false;
      if (status === 'failed') {
        // Past its retries: the same message again, so the receiver can still dedupe it by its id.
        return (await this.s.queue.replay(name, state.message, nowMs)) !== undefined;
      }
      if (status === 'delivered' && STREAM_ID.test(state.upto ?? '')) cursor = state.upto as string;
      // Gone before it was delivered: rebuilt from the place it left.
      await this.s.redis.multi().hset(key, 'cursor', cursor).hdel(key, 'message', 'upto').exec();
    }
    let page;
    try {
      page = await readRecords(this.s.redis, cursor, READ);
    } catch (err) {
      // Trimmed past the endpoint's place (down longer than the retention): on from what is kept.
      this.s.log.error(
        { webhook: name, err: (err as Error).message },
        'usage events lost to an endpoint down past the retention',
      );
      await this.s.redis.hset(key, 'cursor', await keptFrom(this.s.redis));
      return false;
    }
    const mine = page.records.filter((r) => everyone || r.owner === w.spec.owner).slice(0, BATCH);
    if (mine.length === 0) {
      if (page.next !== cursor) await this.s.redis.hset(key, 'cursor', page.next);
      return false;
    }
    // A full batch ends at its last event; otherwise at the last entry read (the others' skipped too).
    const upto = mine.length === BATCH ? (mine.at(-1)?.id ?? page.next) : page.next;
    const body = JSON.stringify(mine.map((r) => toCloudEvent(r, this.s.source)));
    const message = await this.s.queue.enqueue(name, USAGE_WEBHOOK_EVENT, body, nowMs);
    await this.s.redis.hset(key, 'message', message, 'upto', upto);
    return true;
  }
}
