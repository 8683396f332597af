import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';
import { redisKeys } from '../../common/redis/schema.js';
import { outsideCall } from '../../common/tracing/call-trace.js';

// Closes one minute: its hash's figures become one stream entry per key, identity and target, and
// the hash goes, in one script (so no figure is streamed twice, and none added meanwhile is
// lost: a flush after it makes the hash and lists the minute anew, closed on a later pass).
// KEYS: the minute's hash, the open minutes, the stream, the trimmed mark; ARGV: the minute, and
// the stream id below which entries are past the retention. Returns the entries added.
const CLOSE = `
local fields = redis.call('HGETALL', KEYS[1])
local groups, order = {}, {}
for i = 1, #fields, 2 do
  local f = fields[i]
  local bar = string.find(f, '|', 1, true)
  local n = tonumber(fields[i + 1])
  if bar and n then
    local metric, g = string.sub(f, 1, bar - 1), string.sub(f, bar + 1)
    local e = groups[g]
    if not e then
      e = { c = 0, w = 0, k = 0, x = {}, nx = 0 }
      groups[g] = e
      order[#order + 1] = g
    end
    if metric == 'c' then e.c = e.c + n
    elseif metric == 'w' then e.w = e.w + n
    elseif metric == 'k' then e.k = e.k + n
    elseif string.sub(metric, 1, 2) == 'x:' then
      e.x[string.sub(metric, 3)] = (e.x[string.sub(metric, 3)] or 0) + n
      e.nx = e.nx + 1
    end
  end
end
for _, g in ipairs(order) do
  local e = groups[g]
  local x = '{}'
  if e.nx > 0 then x = cjson.encode(e.x) end
  redis.call('XADD', KEYS[3], '*', 'minute', ARGV[1], 'group', g,
    'calls', string.format('%d', e.c), 'rows', string.format('%d', e.w),
    'credits', string.format('%d', e.k), 'refusals', x)
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
local last = redis.call('XREVRANGE', KEYS[3], '(' .. ARGV[2], '-', 'COUNT', 1)
if #last > 0 then
  redis.call('SET', KEYS[4], last[1][1])
  redis.call('XTRIM', KEYS[3], 'MINID', ARGV[2])
end
return #order`;

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** Minutes closed per pass at most (the next pass takes the rest). */
const MINUTES_PER_PASS = 60;
const LOCK_MS = 30_000;

export interface CloserOptions {
  /** How often a pass looks for minutes to close. */
  everyMs: number;
  /** How long after its end a minute is closed: every replica's flush of it is in by then. */
  graceMs: number;
  /** How long the stream keeps an entry. */
  retentionMs: number;
}

/**
 * Closes the minutes of usage for export once they are over (and `graceMs` more, for the other
 * replicas' flushes): whichever central gateway replica holds the lock turns each into the stream
 * that the pull API reads and the pusher sends, one entry per key, identity and target, whose
 * stream id is the event's id. Figures flushed after their minute was closed (a replica that could
 * not reach Redis for a while) are closed again, as a further entry of the same minute.
 */
export class MinuteCloser {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private readonly token = randomBytes(12).toString('hex');

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
    private readonly opts: CloserOptions,
  ) {}

  start(): void {
    this.timer = outsideCall(() => setInterval(() => void this.closeDue(), this.opts.everyMs));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass: closes the minutes due by `nowMs`; resolves with the entries added (never throws). */
  closeDue(nowMs = Date.now()): Promise<number> {
    this.running ??= this.pass(nowMs)
      .catch((err: unknown) => {
        this.log.warn({ err: (err as Error).message }, 'usage minutes not closed this time (Redis?)');
        return 0;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(nowMs: number): Promise<number> {
    const lock = redisKeys.usageExportCloseLock;
    if ((await this.redis.set(lock, this.token, 'PX', LOCK_MS, 'NX')) !== 'OK') return 0;
    try {
      const last = Math.floor((nowMs - this.opts.graceMs) / 60_000) - 1;
      const minutes = await this.redis.zrangebyscore(
        redisKeys.usageExportOpen,
        '-inf',
        last,
        'LIMIT',
        0,
        MINUTES_PER_PASS,
      );
      let added = 0;
      const trimBelow = `${Math.max(0, nowMs - this.opts.retentionMs)}-0`;
      for (const minute of minutes) {
        added += (await this.redis.eval(
          CLOSE,
          4,
          redisKeys.usageExportMinute(Number(minute)),
          redisKeys.usageExportOpen,
          redisKeys.usageExportStream,
          redisKeys.usageExportTrimmed,
          minute,
          trimBelow,
        )) as number;
      }
      return added;
    } finally {
      await this.redis.eval(RELEASE, 1, lock, this.token);
    }
  }
}
