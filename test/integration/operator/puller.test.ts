import {
  CreateBucketCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { s3ClientFromEnv } from '../../../common/storage/s3-client.js';
import { minio, type MinioInfo } from '../../harness/index.js';
import { ROOT, eventually } from './support.js';

const run = promisify(execFile);
const CLI = path.join(ROOT, 'bin/tollgate.js');

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function awsEnv(m: MinioInfo, overrides: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    AWS_ACCESS_KEY_ID: m.accessKeyId,
    AWS_SECRET_ACCESS_KEY: m.secretAccessKey,
    AWS_ENDPOINT_URL: m.endpoint,
    AWS_REGION: m.region,
    ...overrides,
  };
}

/** Our lines only: Node itself may warn on stderr (the AWS SDK's Node version notice). */
const ownLines = (stderr: string) => stderr.replace(/^\(node:\d+\) [\s\S]*?--trace-warnings[^\n]*\n/, '');

async function pull(args: string[], env: NodeJS.ProcessEnv): Promise<Result> {
  try {
    const { stdout, stderr } = await run('node', [CLI, 'pull', ...args], { env });
    return { code: 0, stdout, stderr: ownLines(stderr) };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: ownLines(err.stderr) };
  }
}

const listFiles = async (dir: string) =>
  (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();

describe('tollgate pull against MinIO', () => {
  let m: MinioInfo;
  let s3: S3Client;
  const bucket = `pull-${randomBytes(4).toString('hex')}`;
  const put = (key: string, body: Buffer | string) =>
    s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  let work: string;

  beforeAll(async () => {
    m = await minio();
    s3 = s3ClientFromEnv(awsEnv(m));
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    work = await mkdtemp(path.join(tmpdir(), 'tg-pull-'));
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  test('pulls exactly the folder (models/a, not models/ab), verifies sizes, prints a line per file and a summary', async () => {
    const big = randomBytes(20 * 1024 * 1024 + 123);
    await put('models/a/model.joblib', big);
    await put('models/a/model-settings.json', '{"name":"model-a"}');
    await put('models/a/nested/deep/extra.txt', 'deep');
    await put('models/a/empty', '');
    await put('models/ab/not-mine.txt', 'no');
    await put('models/a-other.txt', 'no');
    const dest = path.join(work, 'exact');
    const r = await pull(
      [`s3://${bucket}/models/a`, dest, '--part-size-mib', '4', '--concurrency', '8'],
      awsEnv(m),
    );
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(await listFiles(dest)).toEqual([
      'empty',
      'model-settings.json',
      'model.joblib',
      'nested/deep/extra.txt',
    ]);
    expect((await readFile(path.join(dest, 'model.joblib'))).equals(big)).toBe(true);
    expect(await readFile(path.join(dest, 'nested/deep/extra.txt'), 'utf8')).toBe('deep');
    const lines = r.stdout.trim().split('\n');
    expect(lines.slice(0, -1).sort()).toEqual([
      expect.stringMatching(/^pulled empty 0 B in \d+\.\d\ds$/),
      expect.stringMatching(/^pulled model-settings.json 18 B in /),
      expect.stringMatching(/^pulled model.joblib 20\.0 MiB in /),
      expect.stringMatching(/^pulled nested\/deep\/extra.txt 4 B in /),
    ]);
    expect(lines.at(-1)).toMatch(/^pulled 4 files, 20\.0 MiB in \d+\.\d\ds \(\d+\.\d MB\/s\)$/);
    // A trailing slash means the same folder.
    const again = await pull([`s3://${bucket}/models/a/`, path.join(work, 'slash')], awsEnv(m));
    expect(again.code).toBe(0);
    expect(await listFiles(path.join(work, 'slash'))).toHaveLength(4);
  });

  test('no such bucket: non-zero exit and a message naming the bucket', async () => {
    const r = await pull(
      [`s3://no-such-bucket-${randomBytes(3).toString('hex')}/m`, path.join(work, 'x')],
      awsEnv(m),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^tollgate pull: bucket "no-such-bucket-[0-9a-f]+" does not exist; check the bucket in storageUri and AWS_ENDPOINT_URL \[no_such_bucket\]\n$/,
    );
  });

  test('an empty prefix: non-zero exit, nothing pulled', async () => {
    const r = await pull([`s3://${bucket}/models/nothing-here`, path.join(work, 'empty')], awsEnv(m));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no files in s3:\/\/pull-[0-9a-f]+\/models\/nothing-here\/ .*\[empty_prefix\]/);
    expect(existsSync(path.join(work, 'empty'))).toBe(false);
  });

  test('access denied (wrong secret): non-zero exit naming the credentials', async () => {
    const r = await pull(
      [`s3://${bucket}/models/a`, path.join(work, 'denied')],
      awsEnv(m, { AWS_SECRET_ACCESS_KEY: 'wrong-secret-key' }),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /access denied reading s3:\/\/.*check AWS_ACCESS_KEY_ID\/AWS_SECRET_ACCESS_KEY .*\[access_denied\]/,
    );
  });

  test('a file that vanishes mid-pull: non-zero exit naming it, nothing left behind', async () => {
    await put('models/vanish/big.bin', randomBytes(96 * 1024 * 1024));
    await put('models/vanish/small.txt', 'soon gone');
    const dest = path.join(work, 'vanish');
    const child = spawn(
      'node',
      [CLI, 'pull', `s3://${bucket}/models/vanish`, dest, '--concurrency', '1', '--part-size-mib', '1'],
      { env: awsEnv(m) },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.resume();
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
    // Largest first, one transfer at a time: small.txt is fetched last, so delete it while big.bin streams.
    await eventually(
      async () => existsSync(path.join(dest, 'big.bin.tollgate-part')),
      'the first part file',
      10_000,
    );
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'models/vanish/small.txt' }));
    expect(await exited).toBe(1);
    expect(stderr).toMatch(
      /s3:\/\/pull-[0-9a-f]+\/models\/vanish\/small.txt was listed but is gone .*\[object_vanished\]/,
    );
    expect(await listFiles(dest)).toEqual([]);
  });

  test('disk full (a 1 MiB tmpfs): non-zero exit saying so, partial files removed', async () => {
    await put('models/large/blob.bin', randomBytes(3 * 1024 * 1024));
    const mnt = path.join(work, 'tiny');
    await run('mkdir', ['-p', mnt]);
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]);
    try {
      const r = await pull([`s3://${bucket}/models/large`, path.join(mnt, 'model')], awsEnv(m));
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /no space left writing to .*tiny\/model; give the volume more room .*\[disk_full\]/,
      );
      expect(await listFiles(path.join(mnt, 'model'))).toEqual([]);
    } finally {
      await run('umount', [mnt]);
    }
  });

  test('file:// folders pull the same way', async () => {
    const dest = path.join(work, 'from-file');
    const r = await pull([`file://${path.join(work, 'exact')}`, dest], { PATH: process.env.PATH });
    expect(r.code).toBe(0);
    expect(await listFiles(dest)).toEqual([
      'empty',
      'model-settings.json',
      'model.joblib',
      'nested/deep/extra.txt',
    ]);
  });
});
