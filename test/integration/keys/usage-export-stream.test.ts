// Usage for export on a real Redis, with the clock given: two replicas' meters of one minute close
// into one event per key, identity and target; a flush whose answer was lost counts once; figures
// that come after their minute was closed come as a further event, never lost; the retention
// trims, and a cursor from before it is refused rather than answered with a gap.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { isTollgateError } from '../../../common/errors.js';
import { createLogger } from '../../../common/logger.js';
import { redisKeys } from '../../../common/redis/schema.js';
import type { KeyGrant } from '../../../common/resources/grant.js';
import { toCloudEvent, usageEventSchema } from '../../../gateway/usage-export/cloud-events.js';
import { MinuteCloser } from '../../../gateway/usage-export/closer.js';
import { UsageMeter, SERVER } from '../../../gateway/usage-export/meter.js';
import { cursorAt, readRecords, type UsageRecord } from '../../../gateway/usage-export/records.js';
import { redis } from '../../harness/index.js';

const log = createLogger('usage-export', 'silent');
const MINUTE = 60_000;
/** Half an hour ago, on a minute: the minute every figure below falls in, unless said. */
const T0 = Math.floor(Date.now() / 60_000) * 60_000 - 30 * 60_000;
const iso = (ms: number) => new Date(ms).toISOString();
const DAY_S = 86_400;

let url: string;
let client: Redis;

const grant = (id: string, owner: string, identity?: string): KeyGrant => ({
  id,
  owner,
  module: 'platform',
  roles: ['viewer'],
  ...(identity === undefined ? {} : { identity: { name: identity, account: `@${'0'.repeat(24)}` } }),
});
const alicesKey = grant('a'.repeat(20), 'alice', 'acme');
const bobsKey = grant('b'.repeat(20), 'bob');
const fraud = { kind: 'model', name: 'model-fraud' } as const;

const closer = (retentionMs = 7 * DAY_S * 1000) =>
  new MinuteCloser(client, log, { everyMs: 60_000, graceMs: 5_000, retentionMs });

/** Every record the stream holds, read a page at a time from the start. */
async function everything(limit = 2): Promise<UsageRecord[]> {
  const out: UsageRecord[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await readRecords(client, after, limit);
    out.push(...page.records);
    if (!page.more) return out;
    after = page.next;
  }
}

beforeAll(async () => {
  url = (await redis('usage-export-stream')).url;
  client = new Redis(url);
});
beforeEach(async () => {
  await client.flushdb();
});
afterAll(() => client.disconnect());

describe('usage for export', () => {
  it('two replicas’ figures of a minute close into one event per key, identity and target, once the minute is over', async () => {
    const one = new UsageMeter(client, log, 60_000, DAY_S);
    const two = new UsageMeter(client, log, 60_000, DAY_S);
    for (let i = 0; i < 3; i++) one.called(alicesKey, fraud, 2, T0 + i * 1000);
    two.called(alicesKey, fraud, 4, T0 + 30_000);
    one.rows(alicesKey, fraud, 5, T0 + 1000);
    two.rows(alicesKey, fraud, 7, T0 + 31_000);
    two.refused(alicesKey, 'credits_exhausted', fraud, T0 + 40_000);
    two.refused(alicesKey, 'credits_exhausted', fraud, T0 + 41_000);
    // A refusal decided before the call's target was known, and a listing: their own events.
    one.refused(alicesKey, 'ip_not_allowed', undefined, T0 + 2000);
    one.called(alicesKey, SERVER, 1, T0 + 3000);
    two.called(bobsKey, { kind: 'workflow', name: 'wf-1/svc' }, 1, T0 + 50_000);
    // The next minute's, not closed with this one.
    one.called(alicesKey, fraud, 2, T0 + MINUTE + 1000);
    await Promise.all([one.flush(), two.flush()]);

    // Not before the minute is over and its grace gone: a replica's flush of it may still come.
    expect(await closer().closeDue(T0 + MINUTE + 4_000)).toBe(0);
    expect(await closer().closeDue(T0 + MINUTE + 6_000)).toBe(4);
    const records = await everything();
    const byTarget = (r: UsageRecord) => `${r.keyId}:${r.target?.kind ?? '-'}:${r.target?.name ?? ''}`;
    const seen = Object.fromEntries(records.map((r) => [byTarget(r), r]));
    expect(Object.keys(seen).sort()).toEqual([
      `${alicesKey.id}:-:`,
      `${alicesKey.id}:model:model-fraud`,
      `${alicesKey.id}:server:`,
      `${bobsKey.id}:workflow:wf-1/svc`,
    ]);
    expect(seen[`${alicesKey.id}:model:model-fraud`]).toMatchObject({
      minuteMs: T0,
      owner: 'alice',
      identity: 'acme',
      calls: 4,
      rows: 12,
      credits: 10,
      refusals: { credits_exhausted: 2 },
    });
    expect(seen[`${alicesKey.id}:-:`]).toMatchObject({ calls: 0, refusals: { ip_not_allowed: 1 } });
    expect(seen[`${bobsKey.id}:workflow:wf-1/svc`]).toMatchObject({ owner: 'bob', calls: 1, credits: 1 });
    expect(seen[`${bobsKey.id}:workflow:wf-1/svc`]?.identity).toBeUndefined();

    // As CloudEvents: the stream id is the event's id; the identity is whom it bills.
    const fraudEvent = toCloudEvent(
      seen[`${alicesKey.id}:model:model-fraud`] as UsageRecord,
      '/tollgate/test',
    );
    expect(usageEventSchema.parse(fraudEvent)).toEqual(fraudEvent);
    expect(fraudEvent).toMatchObject({
      specversion: '1.0',
      id: seen[`${alicesKey.id}:model:model-fraud`]?.id,
      source: '/tollgate/test',
      type: 'dev.tollgate.usage.minute',
      subject: 'acme',
      time: iso(T0),
      data: {
        keyId: alicesKey.id,
        target: fraud,
        windowStart: iso(T0),
        windowEnd: iso(T0 + MINUTE),
        refused: 2,
      },
    });
    expect(toCloudEvent(seen[`${bobsKey.id}:workflow:wf-1/svc`] as UsageRecord, '/t').subject).toBe(
      bobsKey.id,
    );

    // The next minute closes on its own, later; nothing is closed twice.
    expect(await closer().closeDue(T0 + MINUTE + 7_000)).toBe(0);
    expect(await closer().closeDue(T0 + 2 * MINUTE + 6_000)).toBe(1);
    const all = await everything();
    expect(all).toHaveLength(5);
    expect(all.at(-1)).toMatchObject({ minuteMs: T0 + MINUTE, calls: 1, credits: 2 });
    expect(await client.exists(redisKeys.usageExportMinute(T0 / MINUTE))).toBe(0);
  });

  it('a flush whose answer was lost is sent again and counted once', async () => {
    // The script runs in Redis, then the connection drops before its answer comes back.
    const real = new Redis(url);
    let lose = true;
    const flaky = new Proxy(real, {
      get(target, prop, receiver) {
        if (prop !== 'eval') return Reflect.get(target, prop, receiver) as unknown;
        return async (...args: unknown[]) => {
          const result = await (target.eval as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          if (lose) {
            lose = false;
            throw new Error('Connection is closed.');
          }
          return result;
        };
      },
    });
    try {
      const meter = new UsageMeter(flaky, log, 60_000, DAY_S);
      meter.called(alicesKey, fraud, 3, T0);
      await meter.flush();
      // Meanwhile another call, flushed with the retry of the first.
      meter.called(alicesKey, fraud, 3, T0 + 1000);
      await meter.flush();
      await closer().closeDue(T0 + MINUTE + 6_000);
      const [record, ...rest] = await everything();
      expect(rest).toHaveLength(0);
      expect(record).toMatchObject({ calls: 2, credits: 6 });
    } finally {
      real.disconnect();
    }
  });

  it('figures kept while Redis was away, flushed after their minute was closed, come as a further event', async () => {
    // A replica cut off from Redis: its flushes fail until it is back.
    let down = true;
    const away = new Proxy(client, {
      get(target, prop, receiver) {
        if (prop !== 'eval' || !down) return Reflect.get(target, prop, receiver) as unknown;
        return () => Promise.reject(new Error('connect ECONNREFUSED'));
      },
    });
    const late = new UsageMeter(away, log, 60_000, DAY_S);
    const onTime = new UsageMeter(client, log, 60_000, DAY_S);
    late.called(alicesKey, fraud, 1, T0 + 10_000);
    late.called(alicesKey, fraud, 1, T0 + 11_000);
    onTime.called(alicesKey, fraud, 1, T0 + 12_000);
    await late.flush();
    await onTime.flush();
    await closer().closeDue(T0 + MINUTE + 6_000);
    down = false;
    await late.flush();
    await closer().closeDue(T0 + MINUTE + 20_000);
    const records = await everything();
    expect(records.map((r) => [r.minuteMs, r.calls])).toEqual([
      [T0, 1],
      [T0, 2],
    ]);
    expect(new Set(records.map((r) => r.id)).size).toBe(2);
  });

  it('the retention trims the stream; a cursor from before what it trimmed is refused (410), a time after it is read', async () => {
    const meter = new UsageMeter(client, log, 60_000, DAY_S);
    meter.called(alicesKey, fraud, 1, T0);
    await meter.flush();
    await closer().closeDue(T0 + MINUTE + 6_000);
    expect(await everything()).toHaveLength(1);
    await sleep(5);
    // With a retention of a millisecond, the old entry goes when the next minute is closed.
    meter.called(alicesKey, fraud, 1, T0 + 5 * MINUTE);
    await meter.flush();
    await closer(1).closeDue(Date.now());
    const kept = await everything();
    expect(kept.map((r) => r.minuteMs)).toEqual([T0 + 5 * MINUTE]);
    const refused = await readRecords(client, '0-1', 10).catch((err: unknown) => err);
    expect(isTollgateError(refused) && [refused.status, refused.code]).toEqual([410, 'usage_cursor_expired']);
    expect(isTollgateError(refused) && refused.message).toMatch(/no longer kept.*start again without since/);
    // The newest kept entry's own id is a place after what was trimmed.
    expect((await readRecords(client, kept[0]?.id, 10)).records).toHaveLength(0);
    // A time: the events closed at or after it; one before what was trimmed is refused too.
    const trimmedAt = Number((await client.get(redisKeys.usageExportTrimmed))?.split('-')[0]);
    expect((await readRecords(client, cursorAt(trimmedAt + 1), 10)).records).toHaveLength(1);
    await expect(readRecords(client, cursorAt(trimmedAt - 1000), 10)).rejects.toMatchObject({
      code: 'usage_cursor_expired',
    });
  });

  it('an entry that does not parse is passed over, and the cursor moves past it', async () => {
    const meter = new UsageMeter(client, log, 60_000, DAY_S);
    meter.called(bobsKey, fraud, 1, T0);
    await meter.flush();
    await client.xadd(redisKeys.usageExportStream, '*', 'minute', 'x', 'group', '[]');
    await closer().closeDue(T0 + MINUTE + 6_000);
    const page = await readRecords(client, undefined, 10);
    expect(page.records.map((r) => r.keyId)).toEqual([bobsKey.id]);
    expect(page.next).toBe(page.records[0]?.id);
    const first = await client.xrange(redisKeys.usageExportStream, '-', '+', 'COUNT', 1);
    const afterJunk = await readRecords(client, first[0]?.[0], 10);
    expect(afterJunk.records.map((r) => r.keyId)).toEqual([bobsKey.id]);
  });
});
