import { createReadStream } from 'node:fs';
import { open, readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { isTollgateError, TollgateError } from '../../common/errors.js';
import { fileTooLarge, folderTooLarge } from './limits.js';
import { MAX_LISTED_OBJECTS, MAX_TEXT_BYTES, type ObjectStore, type StoredObject } from './object-store.js';

const errno = (e: unknown) => (e as NodeJS.ErrnoException | undefined)?.code;

/** A folder on the local disk (file:// URIs; also what `tollgate validate` reads). */
export class FileStore implements ObjectStore {
  readonly uri: string;
  constructor(private readonly dir: string) {
    this.uri = `file://${dir}`;
  }

  async list(): Promise<StoredObject[]> {
    let entries;
    try {
      entries = await readdir(this.dir, { recursive: true, withFileTypes: true });
    } catch (e) {
      throw this.mapError(e, '');
    }
    const files = entries.filter((e) => e.isFile());
    if (files.length > MAX_LISTED_OBJECTS) throw folderTooLarge(this.uri);
    return Promise.all(
      files.map(async (e) => {
        const full = path.join(e.parentPath, e.name);
        const rel = path.relative(this.dir, full).split(path.sep).join('/');
        return { path: rel, size: (await stat(full)).size };
      }),
    );
  }

  async readText(rel: string): Promise<string> {
    try {
      const full = this.resolve(rel);
      if ((await stat(full)).size > MAX_TEXT_BYTES) throw fileTooLarge(`${this.uri}/${rel}`);
      return await readFile(full, 'utf8');
    } catch (e) {
      throw isTollgateError(e) ? e : this.mapError(e, rel);
    }
  }

  async openRead(
    rel: string,
    range?: { start: number; end: number },
    signal?: AbortSignal,
  ): Promise<Readable> {
    const full = this.resolve(rel);
    // Open eagerly so a vanished file fails here, with the right code, not mid-pipeline.
    let handle;
    try {
      handle = await open(full, 'r');
    } catch (e) {
      throw this.mapError(e, rel);
    }
    return createReadStream('', { fd: handle, ...(range ?? {}), ...(signal ? { signal } : {}) });
  }

  private resolve(rel: string): string {
    const full = path.resolve(this.dir, rel);
    if (!full.startsWith(this.dir + path.sep)) {
      throw new TollgateError('invalid_path', `"${rel}" is outside ${this.uri}`);
    }
    return full;
  }

  private mapError(e: unknown, rel: string): TollgateError {
    const code = errno(e);
    const where = rel === '' ? this.uri : `${this.uri}/${rel}`;
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      return rel === ''
        ? new TollgateError('no_such_folder', `${where} does not exist; check the path in storageUri`, {
            cause: e,
          })
        : new TollgateError(
            'object_vanished',
            `${where} was listed but is gone (deleted or renamed while reading); retry once the upload is complete`,
            { cause: e },
          );
    }
    if (code === 'EACCES' || code === 'EPERM') {
      return new TollgateError(
        'access_denied',
        `cannot read ${where}: permission denied; make it readable by this process`,
        { cause: e },
      );
    }
    return new TollgateError('storage_unavailable', `cannot read ${where}: ${(e as Error).message}`, {
      cause: e,
    });
  }
}
