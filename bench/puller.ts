import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pullFolder } from '../operator/puller/pull.js';
import { s3ClientFromEnv } from '../common/storage/s3-client.js';
import { S3Store } from '../operator/storage/s3-store.js';
import { startMinio } from '../test/harness/components/minio.js';
import { ProcessRegistry } from '../test/harness/processes.js';

/**
 * `tollgate pull` against a plain sequential AWS SDK loop (list, then GetObject → file, one at a
 * time), same MinIO, same run: a folder of 200 small files, and one 1 GiB file. Targets: at least
 * 2x the loop on the many files, no slower on the large one. Each side runs BENCH_ROUNDS times
 * (default 3; the small files at least 11), alternating which goes first after one unmeasured
 * warm-up run of each side (MinIO's page cache, and the JIT: a warm loop against a cold pull
 * measured the compiler, not the pull); the median counts, since other work on a shared machine
 * makes single runs noisy.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SMALL_ROUNDS = Math.max(ROUNDS, 11);
const SMALL_FILES = 200;
const SMALL_SIZE = 100 * 1024;
const LARGE_SIZE = 1024 * 1024 * 1024;
const PART = 64 * 1024 * 1024;

async function sdkLoop(s3: S3Client, bucket: string, prefix: string, dest: string): Promise<void> {
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: prefix,
        ...(token ? { ContinuationToken: token } : {}),
      }),
    );
    for (const o of page.Contents ?? []) {
      const target = path.join(dest, o.Key!.slice(prefix.length));
      await mkdir(path.dirname(target), { recursive: true });
      const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key! }));
      await pipeline(res.Body as Readable, createWriteStream(target));
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

async function uploadLarge(s3: S3Client, bucket: string, key: string): Promise<void> {
  // One random 64 MiB part sent 16 times: realistic bytes, generated in a blink.
  const part = randomBytes(PART);
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const parts = [];
  for (let n = 1; n <= LARGE_SIZE / PART; n++) {
    const { ETag } = await s3.send(
      new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: n, Body: part }),
    );
    parts.push({ ETag, PartNumber: n });
  }
  await s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: bucket,
      Key: key,
      UploadId,
      MultipartUpload: { Parts: parts },
    }),
  );
}

export async function runPullerBench(): Promise<string[]> {
  const work = await mkdtemp(path.join(tmpdir(), 'tollgate-bench-puller-'));
  const reg = new ProcessRegistry(work);
  try {
    const m = await startMinio(reg, work);
    const env = {
      AWS_ACCESS_KEY_ID: m.accessKeyId,
      AWS_SECRET_ACCESS_KEY: m.secretAccessKey,
      AWS_ENDPOINT_URL: m.endpoint,
      AWS_REGION: m.region,
    };
    const s3 = s3ClientFromEnv(env);
    const bucket = 'bench';
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const small = randomBytes(SMALL_SIZE);
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < SMALL_FILES) {
          const i = next++;
          await s3.send(new PutObjectCommand({ Bucket: bucket, Key: `many/file-${i}.bin`, Body: small }));
        }
      }),
    );
    await uploadLarge(s3, bucket, 'large/model.bin');

    const lines = [`MinIO on loopback; median of the runs shown`];
    // A pull of the small files takes a third of a second, where one busy moment of a shared
    // machine moves a run by a tenth: they get more runs.
    const cases: Array<[string, string, number, number, number]> = [
      [`${SMALL_FILES} files x ${SMALL_SIZE / 1024} KiB`, 'many/', SMALL_FILES * SMALL_SIZE, 2, SMALL_ROUNDS],
      ['1 file x 1 GiB', 'large/', LARGE_SIZE, 1, ROUNDS],
    ];
    for (const [label, prefix, bytes, target, rounds] of cases) {
      const runLoop = async () => {
        const dest = path.join(work, 'loop');
        const s = await timed(() => sdkLoop(s3, bucket, prefix, dest));
        await rm(dest, { recursive: true, force: true });
        return s;
      };
      const runPull = async () => {
        const dest = path.join(work, 'pull');
        const s = await timed(() => pullFolder(new S3Store(s3ClientFromEnv(env), bucket, prefix), dest));
        await rm(dest, { recursive: true, force: true });
        return s;
      };
      // Both sides warm up once, unmeasured (MinIO's page cache, and each side's code in the JIT).
      await runLoop();
      await runPull();
      const loops: number[] = [];
      const pulls: number[] = [];
      for (let round = 0; round < rounds; round++) {
        if (round % 2 === 0) {
          loops.push(await runLoop());
          pulls.push(await runPull());
        } else {
          pulls.push(await runPull());
          loops.push(await runLoop());
        }
      }
      const ours = median(pulls);
      const loop = median(loops);
      const mbps = (s: number) => bytes / 1e6 / s;
      const ratio = loop / ours;
      lines.push(
        `${label.padEnd(22)} ${String(rounds).padStart(2)} runs  tollgate pull ${mbps(ours).toFixed(0).padStart(5)} MB/s (${ours.toFixed(2)} s)   SDK loop ${mbps(loop).toFixed(0).padStart(5)} MB/s (${loop.toFixed(2)} s)   ${ratio.toFixed(2)}x (target >= ${target}x) ${ratio >= target ? 'ok' : 'MISSED'}`,
      );
    }
    return lines;
  } finally {
    await reg.stopAll();
    await rm(work, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  for (const line of await runPullerBench()) console.log(line);
}
