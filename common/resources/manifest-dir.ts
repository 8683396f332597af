import { randomBytes } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { link, mkdir, readFile, readdir, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import type { z } from 'zod';

/**
 * Standalone mode's stand-in for the API server: manifests (the same YAML as the custom resources)
 * in `<dir>/<plural>/<metadata.name>.yaml`. Kind-agnostic; each collection is typed by the zod
 * schema it is opened with. Writes are atomic (temporary file, then rename or link), so a reader or
 * a watcher never sees half a manifest.
 */
export interface Manifest {
  metadata: { name: string };
}

export type ManifestEvent<T> = { type: 'put'; name: string; object: T } | { type: 'delete'; name: string };

/** A file that is not a valid manifest: reported, never fatal to the rest of the collection. */
export type InvalidManifestHandler = (file: string, error: unknown) => void;

// DNS-1123 subdomain, as Kubernetes names are; it also keeps names from escaping the directory.
const NAME_PATTERN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const SUFFIX = '.yaml';

export class ManifestNameError extends Error {
  constructor(name: string) {
    super(`"${name}" is not a valid resource name (lowercase letters, digits, '-' and '.')`);
    this.name = 'ManifestNameError';
  }
}

export class ManifestExistsError extends Error {
  constructor(plural: string, name: string) {
    super(`${plural}/${name} already exists`);
    this.name = 'ManifestExistsError';
  }
}

// Duck-typed: errors from node:fs may come from another realm (e.g. a test VM), where instanceof fails.
const isErrno = (e: unknown, code: string): boolean =>
  typeof e === 'object' && e !== null && (e as NodeJS.ErrnoException).code === code;

export class ManifestCollection<T extends Manifest> {
  readonly dir: string;

  constructor(
    root: string,
    readonly plural: string,
    private readonly schema: z.ZodType<T>,
    private readonly onInvalid: InvalidManifestHandler,
  ) {
    if (!NAME_PATTERN.test(plural)) throw new ManifestNameError(plural);
    this.dir = join(root, plural);
  }

  private file(name: string): string {
    if (!NAME_PATTERN.test(name)) throw new ManifestNameError(name);
    return join(this.dir, name + SUFFIX);
  }

  /** Every valid manifest of this kind; invalid files go to the handler. */
  async list(): Promise<T[]> {
    let entries: string[];
    try {
      entries = await readdir(this.dir);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return [];
      throw e;
    }
    const names = entries
      .filter((f) => f.endsWith(SUFFIX) && !f.startsWith('.'))
      .map((f) => f.slice(0, -SUFFIX.length));
    const objects: Array<T | undefined> = await Promise.all(names.map((n) => this.read(n)));
    return objects.filter((o) => o !== undefined);
  }

  /** The manifest named `name`, or undefined if there is none (or it is invalid). */
  async get(name: string): Promise<T | undefined> {
    return this.read(name);
  }

  private async read(name: string): Promise<T | undefined> {
    const file = this.file(name);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return undefined;
      throw e;
    }
    try {
      const object = this.schema.parse(parse(text));
      if (object.metadata.name !== name) {
        throw new Error(
          `metadata.name is "${object.metadata.name}" but the file is named "${name}${SUFFIX}"`,
        );
      }
      return object;
    } catch (e) {
      this.onInvalid(file, e);
      return undefined;
    }
  }

  /** Writes (creates or replaces) a manifest atomically. */
  async put(object: T): Promise<T> {
    const valid = this.schema.parse(object);
    const temp = await this.writeTemp(valid);
    await rename(temp, this.file(valid.metadata.name));
    return valid;
  }

  /** Writes a manifest only if none of that name exists (atomically: link fails on EEXIST). */
  async create(object: T): Promise<T> {
    const valid = this.schema.parse(object);
    const temp = await this.writeTemp(valid);
    try {
      await link(temp, this.file(valid.metadata.name));
    } catch (e) {
      if (isErrno(e, 'EEXIST')) throw new ManifestExistsError(this.plural, valid.metadata.name);
      throw e;
    } finally {
      await unlink(temp);
    }
    return valid;
  }

  /** Removes a manifest; false if there was none. */
  async delete(name: string): Promise<boolean> {
    try {
      await unlink(this.file(name));
      return true;
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return false;
      throw e;
    }
  }

  /**
   * Calls `listener` for every manifest written or removed from now on (by this process or any
   * other, e.g. a user editing the directory). Returns a function that stops watching.
   */
  async watch(listener: (event: ManifestEvent<T>) => void): Promise<() => void> {
    await mkdir(this.dir, { recursive: true });
    // fs.watch may report one change several times; the manifest is re-read each time, so a
    // repeated event carries the same state and listeners can treat events as idempotent. A file
    // that stops being valid is reported as a delete: what it declared no longer holds.
    const watcher: FSWatcher = watch(this.dir, (_event, filename) => {
      if (filename === null || !filename.endsWith(SUFFIX) || filename.startsWith('.')) return;
      const name = filename.slice(0, -SUFFIX.length);
      if (!NAME_PATTERN.test(name)) return;
      this.read(name).then(
        (object) => listener(object === undefined ? { type: 'delete', name } : { type: 'put', name, object }),
        (e: unknown) => this.onInvalid(join(this.dir, filename), e),
      );
    });
    return () => watcher.close();
  }

  private async writeTemp(object: T): Promise<string> {
    this.file(object.metadata.name);
    await mkdir(this.dir, { recursive: true });
    const temp = join(this.dir, `.${object.metadata.name}.${randomBytes(6).toString('hex')}.tmp`);
    await writeFile(temp, stringify(object), { mode: 0o600 });
    return temp;
  }
}

/** A directory of manifests, one sub-directory per kind (by plural). */
export class ManifestDir {
  constructor(
    readonly root: string,
    private readonly onInvalid: InvalidManifestHandler,
  ) {}

  collection<T extends Manifest>(plural: string, schema: z.ZodType<T>): ManifestCollection<T> {
    return new ManifestCollection(this.root, plural, schema, this.onInvalid);
  }
}
