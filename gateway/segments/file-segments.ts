import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { SegmentStore } from './segment-store.js';

const isMissing = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === 'ENOENT';

/** Segments as files under a directory (standalone: the state directory's `audit/`). */
export class FileSegments implements SegmentStore {
  constructor(
    readonly uri: string,
    private readonly dir: string,
  ) {}

  async put(name: string, body: string): Promise<void> {
    const file = join(this.dir, name);
    await mkdir(dirname(file), { recursive: true });
    // Written aside and renamed: a reader never sees half a segment.
    const temp = `${file}.tmp-${process.pid}`;
    await writeFile(temp, body, { mode: 0o600 });
    await rename(temp, file);
  }

  async list(prefix: string): Promise<string[]> {
    let entries: string[];
    try {
      entries = await readdir(join(this.dir, prefix), { recursive: true });
    } catch (e) {
      if (isMissing(e)) return [];
      throw e;
    }
    return entries.filter((e) => e.endsWith('.jsonl')).map((e) => `${prefix}${e.split('\\').join('/')}`);
  }

  async get(name: string): Promise<string | undefined> {
    try {
      return await readFile(join(this.dir, name), 'utf8');
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
  }

  async delete(names: readonly string[]): Promise<void> {
    await Promise.all(names.map((n) => rm(join(this.dir, n), { force: true })));
  }
}
