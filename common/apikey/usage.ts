import type { Redis } from 'ioredis';
import { redisUnavailable } from '../redis/unavailable.js';
import { hmgetRecord } from '../redis/hmget-record.js';
import { redisKeys } from '../redis/schema.js';

/** A key's usage figures as the gateway records them in `tg:usage:<id>`. */
export interface KeyUsage {
  lastUsed?: string;
  count: number;
  refused: number;
  /** Rows of its inference calls' batches. */
  rows: number;
}

/** Usage of several keys in one round trip; a key never used has no entry. */
export async function readKeyUsage(redis: Redis, ids: readonly string[]): Promise<Map<string, KeyUsage>> {
  const usage = new Map<string, KeyUsage>();
  if (ids.length === 0) return usage;
  const pipeline = redis.pipeline();
  pipeline.eval(
    SHORT_FIELDS,
    ids.length,
    ...ids.map(redisKeys.keyUsage),
    MAX_FIGURE_CHARS,
    'lastUsed',
    'count',
    'refused',
    'rows',
  );
  const [[, replies] = [null, []]] = await readPipeline(pipeline);
  ids.forEach((id, i) => {
    const value: unknown = Array.isArray(replies) ? replies[i] : undefined;
    if (!Array.isArray(value)) return;
    const [lastUsed, count, refused, rows] = value as Array<string | null>;
    if (lastUsed === null && count === null && refused === null && rows === null) return;
    // Sidecars write these figures, and a team can write what its sidecar may: a figure that is
    // not one the gateway writes is not shown (nor copied into an ApiKey's status, which the API
    // server would refuse).
    const figures = [count, refused, rows].map((n) => (n === null || n === undefined ? 0 : countOf(n)));
    const [c, r, w] = figures;
    if (c === undefined || r === undefined || w === undefined) return;
    if (lastUsed !== null && lastUsed !== undefined && !INSTANT.test(lastUsed)) return;
    const entry: KeyUsage = { count: c, refused: r, rows: w };
    if (lastUsed !== null && lastUsed !== undefined) entry.lastUsed = lastUsed;
    usage.set(id, entry);
  });
  return usage;
}

/**
 * The fields ARGV[2..] of each hash KEYS[i], each only if at most ARGV[1] characters long (else
 * nil). A sidecar's Redis user may HSET these records, any value up to Redis's 512 MB: read whole,
 * one would be sent to the gateway or operator that reads it, for every listing page or pass. It
 * may also make one another type (EXPIRE it, then ZINCRBY): read as empty, failing no other key's.
 */
const SHORT_FIELDS = `
local rows = {}
for i, key in ipairs(KEYS) do
  local row = {}
  local hash = redis.call('TYPE', key).ok == 'hash'
  for j = 2, #ARGV do
    local value = false
    if hash and redis.call('HSTRLEN', key, ARGV[j]) <= tonumber(ARGV[1]) then
      value = redis.call('HGET', key, ARGV[j])
    end
    row[j - 1] = value
  end
  rows[i] = row
end
return rows`;

/**
 * The ARGV[1] highest-ranked members of the sorted set KEYS[1] with their scores, leaving out any
 * longer than ARGV[2] characters (a sidecar's user may ZINCRBY any member, as long as it likes).
 */
const SHORT_TOP = `
local top = {}
if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return top end
local ranked = redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
for i = 1, #ranked, 2 do
  if #ranked[i] <= tonumber(ARGV[2]) then
    top[#top + 1] = ranked[i]
    top[#top + 1] = ranked[i + 1]
  end
end
return top`;

/** Longer than any endpoint the gateway counts (a method and a few path segments). */
const MAX_ENDPOINT_CHARS = 1_024;

/** A figure longer than any the gateway writes (an instant is 24 characters). */
const MAX_FIGURE_CHARS = 32;

/** An instant as the gateway writes it (Date.prototype.toISOString). */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A count as HINCRBY leaves it, within what a number holds exactly; undefined for anything else. */
function countOf(text: string): number | undefined {
  return /^\d{1,15}$/.test(text) ? Number(text) : undefined;
}

const USAGE_UNREADABLE = 'could not read key usage from Redis';

/** The Redis buckets an instant falls in (UTC): its day and minute of day, its month and hour. */
export function usageBuckets(ms: number): {
  day: string;
  minuteOfDay: number;
  month: string;
  hourOfMonth: string;
} {
  const iso = new Date(ms).toISOString();
  const d = new Date(ms);
  return {
    day: iso.slice(0, 10),
    minuteOfDay: d.getUTCHours() * 60 + d.getUTCMinutes(),
    month: iso.slice(0, 7),
    hourOfMonth: `${iso.slice(8, 10)}-${iso.slice(11, 13)}`,
  };
}

export interface UsagePoint {
  /** Start of the bucket (ISO). */
  at: string;
  requests: number;
  refusals: number;
  /** Rows of the inference batches admitted in the bucket. */
  rows: number;
}

export interface UsageSeries {
  /** The last 24 hours, a point per minute, oldest first (1,440 points). */
  perMinute: UsagePoint[];
  /** The last 30 days, a point per hour, oldest first (720 points). */
  perHour: UsagePoint[];
  /** The busiest endpoints, busiest first. */
  topEndpoints: Array<{ endpoint: string; requests: number }>;
}

const MINUTE = 60_000;
const HOUR = 3_600_000;

/** A key's usage over time, read in one round trip (4 day/month hashes and the endpoints). */
export async function readUsageSeries(
  redis: Redis,
  id: string,
  nowMs = Date.now(),
  top = 10,
): Promise<UsageSeries> {
  const firstMinute = Math.floor(nowMs / MINUTE) * MINUTE - 1_439 * MINUTE;
  const firstHour = Math.floor(nowMs / HOUR) * HOUR - 719 * HOUR;
  const days = [...new Set([usageBuckets(firstMinute).day, usageBuckets(nowMs).day])];
  const months = [
    ...new Set(
      Array.from({ length: 31 }, (_, i) => usageBuckets(firstHour + i * 24 * HOUR).month).concat(
        usageBuckets(nowMs).month,
      ),
    ),
  ];
  // Only the fields of the buckets shown, never whole hashes: a sidecar's Redis user (whose
  // password a team reads) may add fields to them, as many as it likes.
  const minuteBuckets = Array.from({ length: 1_440 }, (_, i) => usageBuckets(firstMinute + i * MINUTE));
  const hourBuckets = Array.from({ length: 720 }, (_, i) => usageBuckets(firstHour + i * HOUR));
  const minuteFields = (day: string) =>
    minuteBuckets.flatMap((b) =>
      b.day === day ? [`${b.minuteOfDay}r`, `${b.minuteOfDay}x`, `${b.minuteOfDay}w`] : [],
    );
  const hourFields = (month: string) =>
    hourBuckets.flatMap((b) =>
      b.month === month ? [`${b.hourOfMonth}r`, `${b.hourOfMonth}x`, `${b.hourOfMonth}w`] : [],
    );
  const wanted = [
    ...days.map((day) => ({ key: redisKeys.keyUsageMinutes(id, day), fields: minuteFields(day) })),
    ...months.map((month) => ({ key: redisKeys.keyUsageHours(id, month), fields: hourFields(month) })),
  ].filter((w) => w.fields.length > 0);
  const pipeline = redis.pipeline();
  for (const { key, fields } of wanted) pipeline.hmget(key, ...fields);
  pipeline.eval(SHORT_TOP, 1, redisKeys.keyUsageEndpoints(id), top, MAX_ENDPOINT_CHARS);
  const results = await readPipeline(pipeline);
  const hashes = new Map(wanted.map(({ key, fields }, i) => [key, hmgetRecord(fields, results[i])]));
  const minuteHashes = new Map(days.map((d) => [d, hashes.get(redisKeys.keyUsageMinutes(id, d))]));
  const hourHashes = new Map(months.map((m) => [m, hashes.get(redisKeys.keyUsageHours(id, m))]));
  const point = (ms: number, fields: Record<string, string> | undefined, field: string): UsagePoint => ({
    at: new Date(ms).toISOString(),
    requests: countOf(fields?.[`${field}r`] ?? '0') ?? 0,
    refusals: countOf(fields?.[`${field}x`] ?? '0') ?? 0,
    rows: countOf(fields?.[`${field}w`] ?? '0') ?? 0,
  });
  const perMinute = Array.from({ length: 1_440 }, (_, i) => {
    const ms = firstMinute + i * MINUTE;
    const b = usageBuckets(ms);
    return point(ms, minuteHashes.get(b.day), String(b.minuteOfDay));
  });
  const perHour = Array.from({ length: 720 }, (_, i) => {
    const ms = firstHour + i * HOUR;
    const b = usageBuckets(ms);
    return point(ms, hourHashes.get(b.month), b.hourOfMonth);
  });
  const ranked = (results.at(-1)?.[1] ?? []) as string[];
  const topEndpoints: UsageSeries['topEndpoints'] = [];
  for (let i = 0; i + 1 < ranked.length; i += 2) {
    topEndpoints.push({ endpoint: ranked[i] ?? '', requests: Number(ranked[i + 1]) });
  }
  return { perMinute, perHour, topEndpoints };
}

/**
 * Requests per hour over the last `hours` hours for each key, oldest first: the panel's small
 * chart per row. One pipeline of HMGETs on the hour hashes (one or two months per key).
 */
export async function readRecentHours(
  redis: Redis,
  ids: readonly string[],
  hours = 24,
  nowMs = Date.now(),
): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  if (ids.length === 0) return out;
  const first = Math.floor(nowMs / HOUR) * HOUR - (hours - 1) * HOUR;
  const buckets = Array.from({ length: hours }, (_, i) => usageBuckets(first + i * HOUR));
  const months = [...new Set(buckets.map((b) => b.month))];
  const pipeline = redis.pipeline();
  for (const id of ids) {
    for (const month of months) {
      const fields = buckets.filter((b) => b.month === month).map((b) => `${b.hourOfMonth}r`);
      pipeline.hmget(redisKeys.keyUsageHours(id, month), ...fields);
    }
  }
  const results = await readPipeline(pipeline);
  ids.forEach((id, i) => {
    const values = months.flatMap(
      (_, m) => (results[i * months.length + m]?.[1] ?? []) as Array<string | null>,
    );
    out.set(
      id,
      values.map((v) => Number(v ?? 0)),
    );
  });
  return out;
}

/**
 * Runs a pipeline of reads: every reply, or 503 redis_unavailable if any failed. A key of another
 * type than the read expects (a sidecar's user may make any usage key a sorted set, or a hash) is
 * read as empty: one team's key must not make every key's figures unreadable.
 */
async function readPipeline(
  pipeline: ReturnType<Redis['pipeline']>,
): Promise<Array<[Error | null, unknown]>> {
  let results: Array<[Error | null, unknown]> | null;
  try {
    results = await pipeline.exec();
  } catch (cause) {
    throw redisUnavailable(cause, USAGE_UNREADABLE);
  }
  if (results === null) throw redisUnavailable(undefined, USAGE_UNREADABLE);
  const read = results.map(([err, value]): [Error | null, unknown] =>
    err !== null && err.message.startsWith('WRONGTYPE') ? [null, null] : [err, value],
  );
  const failed = read.find(([err]) => err !== null)?.[0];
  if (failed) throw redisUnavailable(failed, USAGE_UNREADABLE);
  return read;
}
