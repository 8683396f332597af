import type { Redis } from 'ioredis';
import { redisKeys } from '../../common/redis/schema.js';
import type { WebhookEvent } from './events.js';

/** Events waiting for a dispatcher, at most: with no management API running, old ones go. */
const MAX_WAITING = 10_000;

/**
 * Events raised on the data plane (a limit breached, credits low or spent) by any central gateway
 * replica, whether or not it serves the management API: they wait here, in Redis, until a replica
 * that knows the endpoints (gateway/webhooks/dispatcher.ts) fans them out.
 */
export class WebhookInbox {
  constructor(
    private readonly redis: Redis,
    private readonly onError: (err: unknown) => void,
  ) {}

  /**
   * Never waits on the call it is raised by, and never fails it. With `once`, the event is dropped
   * when one with the same `once.key` was pushed within `once.seconds` (a limit of one request per
   * second is breached every second: its owner hears of it once a minute, and the inbox is not
   * flooded with one user's notices).
   */
  push(event: WebhookEvent, once?: { key: string; seconds: number }): void {
    const gate =
      once === undefined
        ? Promise.resolve<'OK' | null>('OK')
        : this.redis.set(redisKeys.webhookOnce(once.key), '1', 'EX', once.seconds, 'NX');
    gate
      .then((first) => {
        if (first !== 'OK') return;
        return this.redis
          .multi()
          .lpush(redisKeys.webhookInbox, JSON.stringify(event))
          .ltrim(redisKeys.webhookInbox, 0, MAX_WAITING - 1)
          .exec();
      })
      .catch(this.onError);
  }

  /** The oldest waiting events, up to `max`, taken (each by one replica). */
  async take(max: number): Promise<WebhookEvent[]> {
    const raw = await this.redis.rpop(redisKeys.webhookInbox, max);
    return (raw ?? []).flatMap((line) => {
      try {
        return [JSON.parse(line) as WebhookEvent];
      } catch {
        return [];
      }
    });
  }
}
