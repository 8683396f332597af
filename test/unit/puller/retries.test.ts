import { randomBytes } from 'node:crypto';
import { mkdtemp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pullFolder } from '../../../operator/puller/pull.js';
import { FileStore } from '../../../operator/storage/file-store.js';
import type { ObjectStore } from '../../../operator/storage/object-store.js';

/** Fault injection around a real folder: the first reads of each range break like a dropped connection. */
function flaky(
  store: ObjectStore,
  failures: number,
  mode: 'reset' | 'short',
): ObjectStore & { reads: number } {
  const seen = new Map<string, number>();
  const wrapped = {
    uri: store.uri,
    reads: 0,
    list: () => store.list(),
    readText: (p: string) => store.readText(p),
    async openRead(p: string, range?: { start: number; end: number }, signal?: AbortSignal) {
      wrapped.reads++;
      const key = `${p}:${range?.start}`;
      const n = (seen.get(key) ?? 0) + 1;
      seen.set(key, n);
      if (n <= failures) {
        if (mode === 'reset') throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
        const full = await store.openRead(p, range, signal);
        const first = (await full[Symbol.asyncIterator]().next()).value as Buffer;
        full.destroy();
        return Readable.from([first.subarray(0, Math.max(1, first.length >> 1))]);
      }
      return store.openRead(p, range, signal);
    },
  };
  return wrapped;
}

describe('puller retries', () => {
  let src: string;
  let dest: string;
  const big = randomBytes(3 * 1024 * 1024 + 7);
  beforeEach(async () => {
    src = await mkdtemp(path.join(tmpdir(), 'tg-src-'));
    dest = await mkdtemp(path.join(tmpdir(), 'tg-dst-'));
    await mkdir(path.join(src, 'sub'));
    await writeFile(path.join(src, 'model.joblib'), big);
    await writeFile(path.join(src, 'sub/settings.json'), '{}');
  });
  afterEach(async () => {
    await rm(src, { recursive: true, force: true });
    await rm(dest, { recursive: true, force: true });
  });

  test.each(['reset', 'short'] as const)(
    'transient failures (%s) are retried and the files come out whole',
    async (mode) => {
      const store = flaky(new FileStore(src), 2, mode);
      const summary = await pullFolder(store, dest, { partSize: 1024 * 1024, attempts: 3 });
      expect(summary).toMatchObject({ files: 2, bytes: big.length + 2 });
      expect((await readFile(path.join(dest, 'model.joblib'))).equals(big)).toBe(true);
      expect(await readFile(path.join(dest, 'sub/settings.json'), 'utf8')).toBe('{}');
      expect(store.reads).toBe(3 * (4 + 1)); // 4 ranges + 1 small file, 3 attempts each
    },
  );

  test('a failure that outlasts the attempts stops the pull with a clear error and leaves nothing', async () => {
    const store = flaky(new FileStore(src), 5, 'short');
    await expect(pullFolder(store, dest, { partSize: 1024 * 1024, attempts: 3 })).rejects.toMatchObject({
      code: 'storage_unavailable',
      message: expect.stringMatching(/the stream ended after \d+ of \d+ bytes; the connection kept breaking/),
    });
    expect(await readdir(dest, { recursive: true })).toEqual([]);
  });
});
