import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import {
  ManifestDir,
  ManifestExistsError,
  type ManifestEvent,
} from '../../../common/resources/manifest-dir.js';

const thingSchema = z.object({
  apiVersion: z.literal('example.dev/v1'),
  kind: z.literal('Thing'),
  metadata: z.object({ name: z.string() }),
  spec: z.object({ size: z.int().min(0) }),
});
type Thing = z.infer<typeof thingSchema>;
const thing = (name: string, size: number): Thing => ({
  apiVersion: 'example.dev/v1',
  kind: 'Thing',
  metadata: { name },
  spec: { size },
});

describe('manifest directory', () => {
  let root: string;
  let invalid: string[];
  let dir: ManifestDir;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'tollgate-manifests-'));
    invalid = [];
    dir = new ManifestDir(root, (file) => invalid.push(file));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('writes <dir>/<plural>/<name>.yaml and reads it back', async () => {
    const things = dir.collection('things', thingSchema);
    await things.put(thing('a', 1));
    expect(await readFile(join(root, 'things', 'a.yaml'), 'utf8')).toContain('kind: Thing');
    expect(await things.get('a')).toEqual(thing('a', 1));
    await things.put(thing('a', 2));
    expect((await things.get('a'))?.spec.size).toBe(2);
    expect(await things.get('missing')).toBeUndefined();
    expect(await readdir(join(root, 'things'))).toEqual(['a.yaml']);
  });

  it('creates exclusively: a second create of the same name fails and keeps the first', async () => {
    const things = dir.collection('things', thingSchema);
    await things.create(thing('a', 1));
    await expect(things.create(thing('a', 2))).rejects.toBeInstanceOf(ManifestExistsError);
    expect((await things.get('a'))?.spec.size).toBe(1);
    expect(await readdir(join(root, 'things'))).toEqual(['a.yaml']);
  });

  it('lists valid manifests and reports invalid ones without failing the listing', async () => {
    const things = dir.collection('things', thingSchema);
    expect(await things.list()).toEqual([]);
    await things.put(thing('a', 1));
    await things.put(thing('b', 2));
    await writeFile(join(root, 'things', 'broken.yaml'), 'kind: Thing\nspec: {size: -1}\n');
    await writeFile(
      join(root, 'things', 'renamed.yaml'),
      await readFile(join(root, 'things', 'a.yaml'), 'utf8'),
    );
    await writeFile(join(root, 'things', 'notes.txt'), 'ignored');
    const names = (await things.list()).map((t) => t.metadata.name).sort();
    expect(names).toEqual(['a', 'b']);
    expect(invalid.map((f) => f.split('/').at(-1)).sort()).toEqual(['broken.yaml', 'renamed.yaml']);
  });

  it('refuses to write what its schema refuses', async () => {
    const things = dir.collection('things', thingSchema);
    await expect(things.put(thing('a', -1))).rejects.toThrow();
    expect(await things.list()).toEqual([]);
  });

  it('deletes, and says whether there was anything to delete', async () => {
    const things = dir.collection('things', thingSchema);
    await things.put(thing('a', 1));
    expect(await things.delete('a')).toBe(true);
    expect(await things.delete('a')).toBe(false);
    expect(await things.get('a')).toBeUndefined();
  });

  it('refuses names that could leave the directory', async () => {
    const things = dir.collection('things', thingSchema);
    for (const name of ['../x', '..', 'a/b', 'A', '', '.hidden', 'a\\b']) {
      await expect(things.get(name)).rejects.toThrow(/not a valid resource name/);
      await expect(things.delete(name)).rejects.toThrow(/not a valid resource name/);
      await expect(things.put(thing(name, 1))).rejects.toThrow(/not a valid resource name/);
    }
    expect(() => dir.collection('../up', thingSchema)).toThrow(/not a valid resource name/);
  });

  it('watches writes and deletes, from this process or another writer', async () => {
    const things = dir.collection('things', thingSchema);
    const events: Array<ManifestEvent<Thing>> = [];
    const stop = await things.watch((e) => events.push(e));
    try {
      await things.put(thing('a', 1));
      await until(() => events.some((e) => e.type === 'put' && e.name === 'a'));
      // A hand edit, as a user would make it in standalone mode.
      await writeFile(
        join(root, 'things', 'b.yaml'),
        'apiVersion: example.dev/v1\nkind: Thing\nmetadata: {name: b}\nspec: {size: 7}\n',
      );
      await until(() => events.some((e) => e.type === 'put' && e.name === 'b' && e.object.spec.size === 7));
      await things.delete('a');
      await until(() => events.some((e) => e.type === 'delete' && e.name === 'a'));
      // Temporary files of atomic writes are never reported.
      expect(events.every((e) => !e.name.startsWith('.'))).toBe(true);
    } finally {
      stop();
    }
  });
});

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
