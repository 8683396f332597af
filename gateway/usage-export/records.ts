import type { Redis } from 'ioredis';
import { z } from 'zod';
import { TollgateError } from '../../common/errors.js';
import { redisKeys } from '../../common/redis/schema.js';

/** One closed minute's usage of a key (its identity, its target), as the stream holds it. */
export interface UsageRecord {
  /** The stream entry's id: the event's id, the same at every delivery and read. */
  id: string;
  /** The minute's start (epoch ms). */
  minuteMs: number;
  keyId: string;
  owner: string;
  identity?: string;
  target?: { kind: 'model' | 'workflow' | 'platform' | 'server'; name?: string };
  calls: number;
  rows: number;
  credits: number;
  refusals: Record<string, number>;
}

/** A stream id, `<ms>-<seq>`, as Redis makes them. */
export const STREAM_ID = /^\d{1,15}-\d{1,15}$/;

const count = z
  .string()
  .regex(/^\d{1,15}$/)
  .transform(Number);
const entrySchema = z.object({
  minute: count,
  group: z.string().transform((text, ctx) => {
    try {
      return groupSchema.parse(JSON.parse(text));
    } catch {
      ctx.addIssue({ code: 'custom', message: 'not a usage group' });
      return z.NEVER;
    }
  }),
  calls: count,
  rows: count,
  credits: count,
  refusals: z.string().transform((text, ctx) => {
    try {
      return z.record(z.string(), z.number().int().nonnegative()).parse(JSON.parse(text));
    } catch {
      ctx.addIssue({ code: 'custom', message: 'not refusals by code' });
      return z.NEVER;
    }
  }),
});
const groupSchema = z.tuple([
  z.string(),
  z.string(),
  z.string().nullable(),
  z.enum(['model', 'workflow', 'platform', 'server']).nullable(),
  z.string().nullable(),
]);

/** One page of the stream after a cursor: its records, where to go on from, and whether more are there. */
export interface RecordPage {
  records: UsageRecord[];
  /** The last entry read (the cursor to pass next); the one given when nothing is new. */
  next: string;
  more: boolean;
}

/**
 * The records after `after` (a stream id; undefined: from the oldest kept), `limit` at most. A
 * cursor from before entries the retention trimmed would miss them: refused (410) rather than
 * answered with a gap. An entry that does not parse (none the gateways write) is passed over.
 */
export async function readRecords(
  redis: Redis,
  after: string | undefined,
  limit: number,
): Promise<RecordPage> {
  if (after !== undefined) {
    const trimmed = await redis.get(redisKeys.usageExportTrimmed);
    if (trimmed !== null && STREAM_ID.test(trimmed) && compareIds(after, trimmed) < 0)
      throw new TollgateError(
        'usage_cursor_expired',
        `the usage events after cursor ${after} are no longer kept (the export keeps them for its retention); start again without since, or with a time`,
        { field: 'since' },
      );
  }
  const entries = (await redis.xrange(
    redisKeys.usageExportStream,
    after === undefined ? '-' : `(${after}`,
    '+',
    'COUNT',
    limit + 1,
  )) as Array<[string, string[]]>;
  const page = entries.slice(0, limit);
  const records = page.flatMap(([id, fields]) => {
    const record = toRecord(id, fields);
    return record === undefined ? [] : [record];
  });
  return { records, next: page.at(-1)?.[0] ?? after ?? '0-0', more: entries.length > limit };
}

/** The cursor of the oldest events kept: after the last the retention trimmed. */
export async function keptFrom(redis: Redis): Promise<string> {
  const trimmed = await redis.get(redisKeys.usageExportTrimmed);
  return trimmed !== null && STREAM_ID.test(trimmed) ? trimmed : '0-0';
}

/** The cursor that starts at `ms`: what is read after it was closed at or after that instant. */
export const cursorAt = (ms: number): string => `${Math.max(0, ms - 1)}-${Number.MAX_SAFE_INTEGER}`;

function toRecord(id: string, fields: string[]): UsageRecord | undefined {
  const raw: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) raw[fields[i] ?? ''] = fields[i + 1] ?? '';
  const parsed = entrySchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const { minute, group, calls, rows, credits, refusals } = parsed.data;
  const [keyId, owner, identity, kind, name] = group;
  const record: UsageRecord = { id, minuteMs: minute * 60_000, keyId, owner, calls, rows, credits, refusals };
  if (identity !== null) record.identity = identity;
  if (kind !== null) record.target = name === null ? { kind } : { kind, name };
  return record;
}

/** Orders two stream ids. */
export function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am !== bm ? am - bm : as - bs;
}
