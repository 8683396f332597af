import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';
import { redisKeys } from '../../common/redis/schema.js';
import { execAll } from '../../common/redis/transaction.js';
import { parseEventLine, type AuditEvent } from './audit-event.js';

/** Events held when the store keeps failing; past this the oldest are dropped (and logged). */
export const MAX_PENDING = 100_000;
/** Events taken from the shared backlog per write. */
const BACKLOG_BATCH = 1_000;
/** How long one replica may hold the backlog's drain. */
const BACKLOG_LOCK_MS = 15_000;
/** Trims what a drain stored and lets the drain go, only if this replica still holds it. */
const RELEASE_BACKLOG = `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) > 0 then redis.call('LTRIM', KEYS[1], ARGV[2], -1) end
redis.call('DEL', KEYS[2])
return 1`;

/**
 * Where events the store refused wait (`tg:audit:backlog`), shared by every replica: a restart
 * cannot lose them, and whichever replica writes next stores them.
 */
export class AuditBacklog {
  private seq = 0;
  /** Events this process put in the backlog (stored later, by whichever replica). */
  readonly spilled = new WeakSet<AuditEvent>();

  constructor(
    private readonly redis: Redis | undefined,
    private readonly log: Logger,
    private readonly replica: string,
  ) {}

  /** Keeps events the store refused; false when Redis will not take them either. */
  async spill(events: AuditEvent[]): Promise<boolean> {
    if (this.redis === undefined) return false;
    try {
      const replies = await execAll(
        this.redis
          .multi()
          .rpush(redisKeys.auditBacklog, ...events.map((e) => JSON.stringify(e)))
          .ltrim(redisKeys.auditBacklog, -MAX_PENDING, -1),
      );
      const length = Number(replies[0] ?? 0);
      if (length > MAX_PENDING) {
        this.log.error(
          { dropped: length - MAX_PENDING },
          'audit store unreachable for too long: the oldest events of the backlog dropped',
        );
      }
      for (const e of events) this.spilled.add(e);
      return true;
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'audit backlog not kept in Redis; held in memory');
      return false;
    }
  }

  /**
   * The backlog's oldest events, read without taking them: one replica at a time holds the drain
   * (a lock that expires, so a replica that dies while holding it stops nobody), and `done(true)`
   * removes them only once they are stored. A crash in between loses nothing.
   */
  async read(): Promise<{ events: AuditEvent[]; done: (stored: boolean) => Promise<void> }> {
    const none = { events: [], done: async () => undefined };
    const redis = this.redis;
    if (redis === undefined) return none;
    const holder = `${this.replica}-${(this.seq++).toString(36)}`;
    let lines: string[];
    try {
      if ((await redis.set(redisKeys.auditBacklogLock, holder, 'PX', BACKLOG_LOCK_MS, 'NX')) !== 'OK')
        return none;
      lines = await redis.lrange(redisKeys.auditBacklog, 0, BACKLOG_BATCH - 1);
    } catch {
      return none;
    }
    const events = lines.flatMap((line) => parseEventLine(line) ?? []);
    return {
      events,
      done: async (stored) => {
        // Only while this replica still holds the drain: past the lock's expiry another may have
        // read the same events, and trimming now could drop ones it has not stored.
        await redis
          .eval(
            RELEASE_BACKLOG,
            2,
            redisKeys.auditBacklog,
            redisKeys.auditBacklogLock,
            holder,
            stored ? lines.length : 0,
          )
          .catch((err: unknown) =>
            this.log.warn(
              { err: (err as Error).message },
              'audit backlog not trimmed; its events will be written again',
            ),
          );
      },
    };
  }
}
