import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Registry } from 'prom-client';
import { createLogger } from '../../../common/logger.js';
import { s3ClientFromEnv } from '../../../common/storage/s3-client.js';
import { openSegmentStore } from '../../../gateway/segments/open-segment-store.js';
import { PayloadLog } from '../../../gateway/v2/payload-log/payload-log.js';
import type { PayloadRecord } from '../../../gateway/v2/payload-log/record.js';
import { minio } from '../../harness/index.js';
import { s3Env } from './stack.js';

const record = (model: string, time: string, n: number): PayloadRecord => ({
  time,
  model,
  version: null,
  requestId: `req-${n}`,
  keyId: 'k'.repeat(20),
  status: 200,
  code: null,
  latencyMs: 1.5,
  request: { inputs: [{ name: 'x', datatype: 'FP64', shape: [1], data: [n] }] },
  response: { outputs: [{ name: 'predict', datatype: 'FP64', shape: [1], data: [n * 2] }] },
});

async function counts(registry: Registry): Promise<Record<string, number>> {
  const metric = (await registry.getMetricsAsJSON()).find(
    (m) => m.name === 'tollgate_payload_log_records_total',
  );
  const values =
    (metric as { values?: Array<{ value: number; labels: Record<string, string> }> }).values ?? [];
  return Object.fromEntries(values.map((v) => [`${v.labels['model']}:${v.labels['outcome']}`, v.value]));
}

/** The payload log's writer on real object storage (MinIO) and on a folder that cannot be written. */
describe('payload logs', () => {
  it('are written to S3 as one JSON Lines object per model and hour, in Hive partitions', async () => {
    const m = await minio();
    const env = s3Env(m);
    const bucket = `payloads-${Date.now().toString(36)}`;
    const s3 = s3ClientFromEnv(env);
    try {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
      const registry = new Registry();
      const log = new PayloadLog(
        await openSegmentStore(`s3://${bucket}/logs`, env),
        { intervalMs: 3_600_000, bufferBytes: 1024 * 1024, replica: 'gw-0' },
        registry,
        createLogger('payload-log', 'silent'),
      );
      log.offer(record('model-a', '2026-11-26T07:59:59.000Z', 1), 'team-a');
      log.offer(record('model-a', '2026-11-26T08:00:01.000Z', 2), 'team-a');
      log.offer(record('model-a', '2026-11-26T08:30:00.000Z', 3), 'team-a');
      log.offer(record('model-b', '2026-11-26T08:30:00.000Z', 4), 'team-b', 'uid-b1');
      // model-b made again under its name: the new Model's records go under its own uid.
      log.offer(record('model-b', '2026-11-26T08:31:00.000Z', 5), 'team-b', 'uid-b2');
      await log.stop();
      const keys = ((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? [])
        .map((o) => o.Key ?? '')
        .sort();
      expect(keys.map((k) => k.replace(/\/gw-0-\d{8}T\d{6}Z-\d+\.jsonl$/, '/…'))).toEqual([
        'logs/namespace=team-a/model=model-a/date=2026-11-26/hour=07/…',
        'logs/namespace=team-a/model=model-a/date=2026-11-26/hour=08/…',
        'logs/namespace=team-b/model=model-b/uid=uid-b1/date=2026-11-26/hour=08/…',
        'logs/namespace=team-b/model=model-b/uid=uid-b2/date=2026-11-26/hour=08/…',
      ]);
      const body = await (
        await s3.send(new GetObjectCommand({ Bucket: bucket, Key: keys[1] }))
      ).Body?.transformToString();
      const lines = (body ?? '')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as PayloadRecord);
      expect(lines.map((l) => l.requestId)).toEqual(['req-2', 'req-3']);
      expect(lines[0]).toEqual(record('model-a', '2026-11-26T08:00:01.000Z', 2));
      expect(await counts(registry)).toEqual({ 'model-a:written': 3, 'model-b:written': 2 });
    } finally {
      s3.destroy();
    }
  });

  it('drop what the buffer cannot hold or the store refuses, and count it, never throwing', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-payloads-'));
    try {
      // A file where the folder should be: every write fails, as a full or read-only disk would.
      const blocked = path.join(dir, 'blocked');
      await writeFile(blocked, 'not a folder');
      const registry = new Registry();
      const line = Buffer.byteLength(JSON.stringify(record('model-a', '2026-11-26T08:00:00.000Z', 1))) + 1;
      const refusals: string[] = [];
      const log = new PayloadLog(
        await openSegmentStore(pathToFileURL(blocked).href, {}),
        // Room for 12 records, of which one team may hold a quarter: 3.
        { intervalMs: 3_600_000, bufferBytes: line * 12 },
        registry,
        createLogger('payload-log', 'silent'),
        (share, team) => refusals.push(`${share} ${team}`),
      );
      // team-a logs with two models: together they hold the team's share, not a share each.
      for (let i = 0; i < 3; i++) log.offer(record('model-a', '2026-11-26T08:00:00.000Z', 1), 'team-a');
      for (let i = 0; i < 2; i++) log.offer(record('model-a2', '2026-11-26T08:00:00.000Z', 1), 'team-a');
      expect(log.hasRoom('model-a3', 'team-a')).toBe(false);
      // Another team's model still has its share.
      expect(log.hasRoom('model-b', 'team-b')).toBe(true);
      for (let i = 0; i < 2; i++) log.offer(record('model-b', '2026-11-26T08:00:00.000Z', 1), 'team-b');
      // Not serialisable (as no record from the gateway is, its values bounded): lost and counted.
      const cyclic: Record<string, unknown> = {};
      cyclic['self'] = cyclic;
      expect(() =>
        log.offer({ ...record('model-b', '2026-11-26T08:00:00.000Z', 1), request: cyclic }, 'team-b'),
      ).not.toThrow();
      await log.flush();
      expect(await counts(registry)).toEqual({
        'model-a2:dropped_buffer_full': 2,
        'model-a3:dropped_buffer_full': 1,
        'model-a:dropped_write_failed': 3,
        'model-b:dropped_write_failed': 2,
        'model-b:dropped_unwritable': 1,
      });
      // Each record past the share is counted against the team that held it, never another.
      expect(refusals).toEqual(Array<string>(3).fill('payload_log_buffer team-a'));
      // The buffer is free again after a write, whatever became of it.
      expect(log.hasRoom('model-a', 'team-a')).toBe(true);
      log.offer(record('model-a', '2026-11-26T08:00:00.000Z', 1), 'team-a');
      await log.stop();
      expect((await counts(registry))['model-a:dropped_write_failed']).toBe(4);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
