import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { redisKeys } from '../../common/redis/schema.js';
import { execAll } from '../../common/redis/transaction.js';
import type { Attempt } from './sender.js';

/** What an endpoint's delivery log shows of one message. */
export interface Delivery {
  /** The message id: the `webhook-id` header, the same on every attempt (receivers dedupe by it). */
  id: string;
  type: string;
  createdAt: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastAttemptAt?: string;
  /** The receiver's HTTP status on the last attempt, if it answered. */
  lastStatus?: number;
  lastError?: string;
  /** When the next attempt is due, while pending. */
  nextAttemptAt?: string;
}

/** A message claimed for an attempt. */
export interface Claimed {
  id: string;
  webhook: string;
  type: string;
  body: string;
  attempts: number;
}

/** A pending message due within this is not replayed: it is about to be sent, or being sent. */
const SOON_MS = 60_000;
// A replay: -1 when the message is not this endpoint's, 0 when it is queued within SOON_MS (or
// leased: a claim moves it a lease ahead), 1 once it is queued again, due now.
const REPLAY = `
if redis.call('HGET', KEYS[1], 'webhook') ~= ARGV[1] then return -1 end
local due = redis.call('ZSCORE', KEYS[2], ARGV[2])
if due and tonumber(due) <= tonumber(ARGV[3]) + tonumber(ARGV[4]) then return 0 end
redis.call('HSET', KEYS[1], 'status', 'pending', 'attempts', 0, 'nextAttemptAt', ARGV[5])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
return 1`;

/** Messages kept per endpoint: older ones go, with their hash and queue entry. */
const LOG_SIZE = 200;

// Moves every due message's next attempt a lease away, atomically: a message is claimed by one
// gateway replica, and comes due again if that replica dies before recording the outcome.
const CLAIM = `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(due) do redis.call('ZADD', KEYS[1], ARGV[2], id) end
return due`;

/**
 * The webhook deliveries, in Redis so every central gateway replica shares one queue: each message
 * (its endpoint, body, attempts and last outcome) in a hash, the queue as a sorted set by when the
 * next attempt is due, and each endpoint's recent messages for its delivery log. A message lives
 * `retentionSeconds`; a failed one stays visible, and replayable, for that long.
 */
export class DeliveryQueue {
  constructor(
    private readonly redis: Redis,
    private readonly retentionSeconds: number,
  ) {}

  /**
   * Queues a message for `webhook`, due now; resolves with its id. The endpoint's oldest messages
   * beyond its log's size go, hash and queue entry too: one endpoint holds at most LOG_SIZE.
   */
  async enqueue(webhook: string, type: string, body: string, nowMs = Date.now()): Promise<string> {
    const id = `msg_${randomBytes(12).toString('hex')}`;
    const key = redisKeys.webhookMessage(id);
    const log = redisKeys.webhookLog(webhook);
    const replies = await execAll(
      this.redis
        .multi()
        .hset(key, {
          webhook,
          type,
          body,
          createdAt: new Date(nowMs).toISOString(),
          status: 'pending',
          attempts: 0,
          nextAttemptAt: new Date(nowMs).toISOString(),
        })
        .expire(key, this.retentionSeconds)
        .zadd(redisKeys.webhookDue, nowMs, id)
        .zadd(log, nowMs, id)
        .expire(log, this.retentionSeconds)
        .zrange(log, 0, -LOG_SIZE - 1),
    );
    const old = replies.at(-1) as string[];
    if (old.length > 0)
      await execAll(
        this.redis
          .multi()
          .del(...old.map((m) => redisKeys.webhookMessage(m)))
          .zrem(redisKeys.webhookDue, ...old)
          .zrem(log, ...old),
      );
    return id;
  }

  /** Claims up to `max` due messages for one attempt each (leased for `leaseMs`). */
  async claim(nowMs: number, leaseMs: number, max: number): Promise<Claimed[]> {
    const ids = (await this.redis.eval(
      CLAIM,
      1,
      redisKeys.webhookDue,
      String(nowMs),
      String(nowMs + leaseMs),
      String(max),
    )) as string[];
    if (ids.length === 0) return [];
    const tx = this.redis.pipeline();
    for (const id of ids) tx.hmget(redisKeys.webhookMessage(id), 'webhook', 'body', 'attempts', 'type');
    const rows = await execAll(tx);
    const claimed: Claimed[] = [];
    const gone: string[] = [];
    ids.forEach((id, i) => {
      const [webhook, body, attempts, type] = rows[i] as Array<string | null>;
      if (webhook === null || webhook === undefined || body === null || body === undefined) gone.push(id);
      else claimed.push({ id, webhook, body, attempts: Number(attempts ?? 0), type: type ?? '' });
    });
    // Expired with its retention: nothing left to send.
    if (gone.length > 0) await this.redis.zrem(redisKeys.webhookDue, ...gone);
    return claimed;
  }

  /**
   * Records an attempt: delivered, due again at `retryAtMs`, or failed for good (no retry left):
   * then it leaves the queue and stays in the log until a replay.
   */
  async record(
    id: string,
    attempt: Attempt,
    attempts: number,
    retryAtMs: number | undefined,
    nowMs = Date.now(),
  ): Promise<void> {
    const key = redisKeys.webhookMessage(id);
    const fields: Record<string, string | number> = {
      attempts,
      lastAttemptAt: new Date(nowMs).toISOString(),
      status: attempt.ok ? 'delivered' : retryAtMs === undefined ? 'failed' : 'pending',
      lastError: attempt.ok ? '' : attempt.error,
      lastStatus: attempt.status ?? '',
      nextAttemptAt: !attempt.ok && retryAtMs !== undefined ? new Date(retryAtMs).toISOString() : '',
    };
    const tx = this.redis.multi().hset(key, fields);
    if (!attempt.ok && retryAtMs !== undefined) tx.zadd(redisKeys.webhookDue, retryAtMs, id);
    else tx.zrem(redisKeys.webhookDue, id);
    await execAll(tx);
  }

  /** Puts a claimed message back, due at `dueAtMs`, its attempts as they were (if it is still queued). */
  async postpone(id: string, dueAtMs: number): Promise<void> {
    await this.redis.zadd(redisKeys.webhookDue, 'XX', dueAtMs, id);
  }

  /** Where a message of `webhook` stands; undefined when it is gone (its retention, its log's size). */
  async status(webhook: string, id: string): Promise<Delivery['status'] | undefined> {
    const [owner, status] = await this.redis.hmget(redisKeys.webhookMessage(id), 'webhook', 'status');
    if (owner !== webhook) return undefined;
    return status === 'delivered' || status === 'failed' ? status : 'pending';
  }

  /** An endpoint's recent messages, newest first. */
  async list(webhook: string, limit: number): Promise<Delivery[]> {
    const ids = await this.redis.zrevrange(redisKeys.webhookLog(webhook), 0, limit - 1);
    const tx = this.redis.pipeline();
    for (const id of ids) tx.hgetall(redisKeys.webhookMessage(id));
    const rows = ids.length === 0 ? [] : await execAll(tx);
    return ids.flatMap((id, i) => {
      const row = rows[i] as Record<string, string>;
      return row.webhook === webhook ? [toDelivery(id, row)] : [];
    });
  }

  /**
   * Queues a message of `webhook` again, due now, with its attempts counted afresh; `pending`
   * when it is already due within SOON_MS, or being sent (its lease): a replay then adds nothing
   * but another send, and replays on a loop would make the gateway a sender of signed POSTs at
   * will. Checked and queued in one script, so two replays at once queue it once.
   */
  async replay(webhook: string, id: string, nowMs = Date.now()): Promise<Delivery | 'pending' | undefined> {
    const key = redisKeys.webhookMessage(id);
    const done = (await this.redis.eval(
      REPLAY,
      2,
      key,
      redisKeys.webhookDue,
      webhook,
      id,
      String(nowMs),
      String(SOON_MS),
      new Date(nowMs).toISOString(),
      String(this.retentionSeconds),
    )) as number;
    if (done === -1) return undefined;
    if (done === 0) return 'pending';
    return toDelivery(id, await this.redis.hgetall(key));
  }
}

function toDelivery(id: string, row: Record<string, string>): Delivery {
  const d: Delivery = {
    id,
    type: row.type ?? '',
    createdAt: row.createdAt ?? '',
    status: row.status === 'delivered' || row.status === 'failed' ? row.status : 'pending',
    attempts: Number(row.attempts ?? 0),
  };
  if (row.lastAttemptAt) d.lastAttemptAt = row.lastAttemptAt;
  if (row.lastStatus) d.lastStatus = Number(row.lastStatus);
  if (row.lastError) d.lastError = row.lastError;
  if (d.status === 'pending' && row.nextAttemptAt) d.nextAttemptAt = row.nextAttemptAt;
  return d;
}
