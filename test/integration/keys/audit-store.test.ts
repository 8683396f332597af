import { CreateBucketCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { createLogger } from '../../../common/logger.js';
import { s3ClientFromEnv } from '../../../common/storage/s3-client.js';
import { AuditLog } from '../../../gateway/audit/audit-log.js';
import { openSegmentStore } from '../../../gateway/segments/open-segment-store.js';
import { NO_PROXIES } from '../../../gateway/http/client-address.js';
import { Redis } from 'ioredis';
import { freePort, minio, redis } from '../../harness/index.js';
import type { IncomingMessage } from 'node:http';
import { createHash } from 'node:crypto';
import type { SegmentStore } from '../../../gateway/segments/segment-store.js';

/**
 * The audit trail's own housekeeping on a real MinIO bucket that it shares with other data (as
 * `s3://lake` would): retention deletes only segments it wrote, and refusals it did not record one
 * by one are told even when no refusal follows.
 */
describe('the audit trail in a shared bucket', () => {
  const bucket = `lake-${Date.now().toString(36)}`;
  let env: Record<string, string>;
  let s3: ReturnType<typeof s3ClientFromEnv>;

  beforeAll(async () => {
    const m = await minio();
    env = {
      AWS_ACCESS_KEY_ID: m.accessKeyId,
      AWS_SECRET_ACCESS_KEY: m.secretAccessKey,
      AWS_ENDPOINT_URL: m.endpoint,
      AWS_REGION: m.region,
    };
    s3 = s3ClientFromEnv(env);
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  afterAll(() => s3?.destroy());

  const names = async (): Promise<string[]> =>
    ((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? []).map((o) => o.Key ?? '');

  const auditLog = async (uri: string, refusalIntervalMs = 60_000, backlog?: Redis): Promise<AuditLog> =>
    new AuditLog(
      await openSegmentStore(uri, env),
      createLogger('audit', 'silent'),
      { flushMs: 60_000, retentionDays: 90, proxies: NO_PROXIES, refusalIntervalMs },
      { redis: backlog },
    );

  it('retention deletes its own old segments and nothing else that shares the place', async () => {
    const digest = 'a'.repeat(32);
    const others = [
      'sales/2024-01-31/part-0.parquet',
      `${digest}/2020-01-01/notes.txt`,
      `${digest}/2020-01-01/1-abcdef12-0.jsonl.bak`,
      'x/2019-12-31/',
    ];
    const ours = `${digest}/2020-01-01/1700000000000-abcdef12-0.jsonl`;
    const recent = `${digest}/${new Date().toISOString().slice(0, 10)}/1700000000000-abcdef12-1.jsonl`;
    for (const Key of [...others, ours, recent])
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: '{}\n' }));
    // The trail at the bucket's root: the sweep runs on start.
    const log = await auditLog(`s3://${bucket}`);
    log.start();
    try {
      const deadline = Date.now() + 10_000;
      while ((await names()).includes(ours) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect((await names()).sort()).toEqual([...others, recent].sort());
    } finally {
      await log.stop();
    }
  });

  it('an action waits for its event to be stored; a store that is down leaves it in the shared backlog, which another replica writes', async () => {
    const r = await redis('audit-backlog');
    const client = new Redis(r.url);
    const owner = `carol-${Date.now().toString(36)}@example.com`;
    const action = (keyId: string) => ({ action: 'key.created' as const, keyId, owner, actor: owner });
    try {
      const up = await auditLog(`s3://${bucket}/durable`, 60_000, client);
      up.record(action('k-stored-000000000000'));
      expect(await up.settle()).toBe('stored');
      await up.stop();

      // The same trail behind an endpoint nobody answers (the store is down).
      const downEnv = { ...env, AWS_ENDPOINT_URL: `http://127.0.0.1:${await freePort()}` };
      const down = new AuditLog(
        await openSegmentStore(`s3://${bucket}/durable`, downEnv),
        createLogger('audit', 'silent'),
        { flushMs: 60_000, retentionDays: 90, proxies: NO_PROXIES, refusalIntervalMs: 60_000 },
        { redis: client },
      );
      down.record(action('k-pending-00000000000'));
      expect(await down.settle(5_000)).toBe('pending');
      // Not held by this process alone: it waits in Redis, where this replica's crash cannot lose it.
      expect(await client.llen('tg:audit:backlog')).toBe(1);
      // A replica that reads the backlog while the store is still down takes nothing out of it
      // (read, and removed only once stored): a crash or a failure there loses no event.
      await down.flush();
      expect(await client.llen('tg:audit:backlog')).toBe(1);
      await down.stop();

      // Another replica (or this one restarted) writes it with its next batch.
      const other = await auditLog(`s3://${bucket}/durable`, 60_000, client);
      await other.flush();
      expect(await client.llen('tg:audit:backlog')).toBe(0);
      const ids = (await other.query(owner, { limit: 50 })).items.map((e) => e.keyId).sort();
      expect(ids).toEqual(['k-pending-00000000000', 'k-stored-000000000000']);
      await other.stop();
    } finally {
      client.disconnect();
    }
  });

  it('a burst of refusals then silence: the ones not recorded are told once the interval has passed', async () => {
    const log = await auditLog(`s3://${bucket}/burst`, 200);
    const req = { headers: {}, socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage;
    const grant = { id: 'k'.repeat(20), owner: 'alice@example.com' };
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) log.refused(grant, 'rate_limited', req, t0 + i);
    await log.flush();
    expect((await log.query(grant.owner, { limit: 50 })).items.map((e) => e.detail)).toEqual([
      { code: 'rate_limited' },
    ]);
    // Nothing else comes for this key; after the interval the next flush tells the four.
    await new Promise((r) => setTimeout(r, 250));
    await log.flush();
    const items = (await log.query(grant.owner, { limit: 50 })).items;
    expect(items.map((e) => [e.action, e.detail])).toEqual([
      ['key.refused', { code: 'rate_limited', unrecordedBefore: 4 }],
      ['key.refused', { code: 'rate_limited' }],
    ]);
    // Told once: another flush adds nothing.
    await new Promise((r) => setTimeout(r, 250));
    await log.flush();
    expect((await log.query(grant.owner, { limit: 50 })).items).toHaveLength(2);
    await log.stop();
  });

  it('a page reads the newest segments, not all an owner wrote in 90 days; the pages still give every event once, newest first', async () => {
    const owner = `dave-${Date.now().toString(36)}@example.com`;
    const digest = createHash('sha256').update(owner).digest('hex').slice(0, 32);
    const store = await openSegmentStore(`s3://${bucket}/pages`, env);
    // A long history, as each of an owner's actions writes a segment: 100 of them, 2 minutes apart.
    const now = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      const at = now - (100 - i) * 120_000;
      const keyId = `k-${String(i).padStart(18, '0')}`;
      ids.unshift(keyId);
      const event = {
        id: `e${i}`,
        at: new Date(at).toISOString(),
        action: 'key.created',
        keyId,
        owner,
        actor: owner,
      };
      const day = new Date(at).toISOString().slice(0, 10);
      await store.put(`${digest}/${day}/${at + 1_000}-abcdef12-${i}.jsonl`, `${JSON.stringify(event)}\n`);
    }
    let reads = 0;
    const counted: SegmentStore = {
      uri: store.uri,
      put: (name, body) => store.put(name, body),
      list: (prefix) => store.list(prefix),
      get: (name) => {
        reads++;
        return store.get(name);
      },
      delete: (names) => store.delete(names),
    };
    const log = new AuditLog(counted, createLogger('audit', 'silent'), {
      flushMs: 60_000,
      retentionDays: 90,
      proxies: NO_PROXIES,
      refusalIntervalMs: 60_000,
    });
    try {
      const first = await log.query(owner, { limit: 10 });
      expect(first.items.map((e) => e.keyId)).toEqual(ids.slice(0, 10));
      // Two rounds of 8 segments: the eleventh newest event is then newer than any segment left.
      expect(reads).toBeLessThanOrEqual(16);
      const all = [...first.items];
      for (let cursor = first.nextCursor; cursor !== undefined;) {
        const page = await log.query(owner, { limit: 25, cursor });
        all.push(...page.items);
        cursor = page.nextCursor;
      }
      expect(all.map((e) => e.keyId)).toEqual(ids);
      // A filter that matches one old event reads back to it.
      const old = await log.query(owner, { limit: 10, keyId: ids[95] });
      expect(old.items.map((e) => e.keyId)).toEqual([ids[95]]);
    } finally {
      await log.stop();
    }
  });
});
