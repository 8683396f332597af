import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';
import { redisKeys } from '../../common/redis/schema.js';

/** How long a user's administrator right, last seen in their token, is believed without a new sign-in. */
export const ADMIN_RIGHT_DAYS = 30;
/** A user's standing is written again at most this often while it stays the same. */
const NOTE_EVERY_MS = 60_000;

interface Seen {
  admin: boolean;
  /** Epoch ms of the call that showed it. */
  at: number;
}

/**
 * Whether each user was an administrator when last seen: the management API notes every caller's
 * standing (their token's groups), and the webhook dispatcher delivers an `allOwners` endpoint
 * every user's events only while its creator's right holds, that is, their last call showed it,
 * within ADMIN_RIGHT_DAYS (the gateway has no directory to ask: a token is the only word on a
 * user's groups). A creator seen without the right, or not seen for that long, gets their own
 * events only, until they call again as an administrator.
 */
export class AdminRights {
  private readonly noted = new Map<string, Seen>();

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
    private readonly rightMs = ADMIN_RIGHT_DAYS * 86_400_000,
  ) {}

  /** A caller's standing as their token shows it; written through when it changed or is a minute old. */
  note(user: string, admin: boolean, nowMs = Date.now()): void {
    const last = this.noted.get(user);
    if (last !== undefined && last.admin === admin && nowMs - last.at < NOTE_EVERY_MS) return;
    const seen: Seen = { admin, at: nowMs };
    // Bounded: a replica remembers the users it has seen lately, the rest are read again.
    if (this.noted.size >= 10_000) this.noted.clear();
    this.noted.set(user, seen);
    this.redis.hset(redisKeys.webhookAdmins, user, JSON.stringify(seen)).catch((err: unknown) => {
      this.noted.delete(user);
      this.log.warn({ err }, "a user's administrator standing was not recorded (Redis?)");
    });
  }

  /** Of `users`, those whose administrator right holds now; none when Redis cannot say (fail closed). */
  async holding(users: readonly string[], nowMs = Date.now()): Promise<Set<string>> {
    const held = new Set<string>();
    if (users.length === 0) return held;
    let raw: Array<string | null>;
    try {
      raw = await this.redis.hmget(redisKeys.webhookAdmins, ...users);
    } catch (err) {
      this.log.warn(
        { err },
        'administrator standings not read: allOwners endpoints get their own events only',
      );
      return held;
    }
    users.forEach((user, i) => {
      const seen = parseSeen(raw[i]);
      if (seen?.admin === true && nowMs - seen.at < this.rightMs) held.add(user);
    });
    return held;
  }
}

function parseSeen(raw: string | null | undefined): Seen | undefined {
  if (raw === null || raw === undefined) return undefined;
  try {
    const value = JSON.parse(raw) as Partial<Seen>;
    return typeof value.admin === 'boolean' && typeof value.at === 'number'
      ? { admin: value.admin, at: value.at }
      : undefined;
  } catch {
    return undefined;
  }
}
