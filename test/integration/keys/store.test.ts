import { KubeConfig } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { DirApiKeyStore } from '../../../common/apikey/dir-store.js';
import { generateKey, hashKey, keyStart } from '../../../common/apikey/format.js';
import type { ApiKeyStore } from '../../../common/apikey/store.js';
import { TollgateError } from '../../../common/errors.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import {
  API_KEY_GROUP,
  API_KEY_PLURAL,
  API_KEY_VERSION,
  apiKeyId,
  newApiKey,
  newKeyId,
  type ApiKey,
  type ApiKeySpec,
} from '../../../common/resources/apikey.js';
import type { Module } from '../../../common/resources/grant.js';
import {
  closeKeyStores,
  customObjects,
  freshNamespace,
  kubeKeyStore,
  kubeWithApiKeys,
  removeTempDirs,
  tempDir,
} from './fixtures.js';

afterAll(removeTempDirs);
afterAll(closeKeyStores);

const run = promisify(execFile);

function spec(owner: string, module: Module, roles: string[], extra: Partial<ApiKeySpec> = {}): ApiKeySpec {
  const key = generateKey(module);
  return { hash: hashKey(key), start: keyStart(key), module, roles, owner, ...extra };
}
const newKey = (s: ApiKeySpec): ApiKey => newApiKey(newKeyId(), s);
const uniqueOwner = (name: string): string => `${name}-${Math.random().toString(36).slice(2, 8)}@example.com`;

const stores: Array<[string, () => Promise<ApiKeyStore>]> = [
  [
    'Kubernetes',
    async () => {
      const { kc } = await kubeWithApiKeys();
      return kubeKeyStore(kc, await freshNamespace(kc, 'keys-store'));
    },
  ],
  [
    'manifest directory',
    async () => new DirApiKeyStore(new ManifestDir(await tempDir('tollgate-keys-'), () => undefined)),
  ],
];

describe.each(stores)('ApiKeyStore on %s', (_label, open) => {
  let store: ApiKeyStore;
  beforeAll(async () => {
    store = await open();
  });

  it('creates a key and reads it back for its owner only', async () => {
    const alice = uniqueOwner('alice');
    const s = spec(alice, 'platform', ['viewer', 'datasets:editor'], {
      name: 'CI pipeline',
      expiresAt: '2031-02-03T04:05:06.000Z',
      rateLimit: { requests: 100, windowSeconds: 60 },
    });
    const created = await store.create(newKey(s));
    expect(created.spec).toEqual(s);
    expect(created.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const id = apiKeyId(created);
    const read = await store.get(alice, id);
    expect(read?.spec).toEqual(s);
    expect(read?.metadata.creationTimestamp).toBe(created.metadata.creationTimestamp);
    expect(await store.get(uniqueOwner('bob'), id)).toBeUndefined();
    expect(await store.get(alice, newKeyId())).toBeUndefined();
  });

  it('lists only the owner’s keys, newest first, in pages that neither overlap nor skip', async () => {
    const carol = uniqueOwner('carol');
    const dave = uniqueOwner('dave');
    const ids: string[] = [];
    for (let i = 0; i < 7; i++)
      ids.push(
        apiKeyId(await store.create(newKey(spec(carol, 'platform', ['viewer'], { name: `key ${i}` })))),
      );
    await store.create(newKey(spec(dave, 'platform', ['viewer'])));

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await store.list(carol, { limit: 3, ...(cursor === undefined ? {} : { cursor }) });
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items.map(apiKeyId));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(7);
    expect(new Set(seen)).toEqual(new Set(ids));
    const all = (await store.list(carol)).items;
    expect(all.map(apiKeyId)).toEqual(seen);
    const created = all.map((k) => k.metadata.creationTimestamp ?? '');
    expect([...created].sort().reverse()).toEqual(created);
    expect(all.every((k) => k.spec.owner === carol)).toBe(true);
  });

  it('searches name, start, module and roles, case-insensitively, and filters by module', async () => {
    const erin = uniqueOwner('erin');
    const nightly = await store.create(
      newKey(spec(erin, 'platform', ['datasets:viewer'], { name: 'Nightly Export' })),
    );
    const workflow = await store.create(newKey(spec(erin, 'bda', ['fraud-scoring'])));
    const unnamed = await store.create(newKey(spec(erin, 'platform', ['models:inference'])));
    const ids = async (filters: Parameters<ApiKeyStore['list']>[1]): Promise<string[]> =>
      (await store.list(erin, filters)).items.map(apiKeyId).sort();

    expect(await ids({ search: 'nightly' })).toEqual([apiKeyId(nightly)]);
    expect(await ids({ search: 'EXPORT' })).toEqual([apiKeyId(nightly)]);
    expect(await ids({ search: 'fraud' })).toEqual([apiKeyId(workflow)]);
    expect(await ids({ search: 'inference' })).toEqual([apiKeyId(unnamed)]);
    expect(await ids({ search: unnamed.spec.start })).toEqual([apiKeyId(unnamed)]);
    expect(await ids({ search: 'bda' })).toEqual([apiKeyId(workflow)]);
    expect(await ids({ module: 'platform' })).toEqual([apiKeyId(nightly), apiKeyId(unnamed)].sort());
    expect(await ids({ module: 'bda', search: 'nightly' })).toEqual([]);
    expect(await ids({ search: '  ' })).toHaveLength(3);
    expect(await ids({ search: 'no such thing' })).toEqual([]);
  });

  it('refuses a cursor it never issued', async () => {
    const owner = uniqueOwner('frank');
    for (const cursor of ['garbage', Buffer.from('{"a":1}').toString('base64url'), '!!!']) {
      const failure = await store.list(owner, { cursor }).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(TollgateError);
      expect(failure).toMatchObject({ status: 400, code: 'invalid_cursor', field: 'cursor' });
    }
  });

  it('deletes only the owner’s key, once', async () => {
    const grace = uniqueOwner('grace');
    const key = await store.create(newKey(spec(grace, 'platform', ['editor'])));
    const id = apiKeyId(key);
    expect(await store.delete(uniqueOwner('mallory'), id)).toBe(false);
    expect(await store.get(grace, id)).toMatchObject({ metadata: { name: `key-${id}` } });
    expect(await store.delete(grace, id)).toBe(true);
    expect(await store.get(grace, id)).toBeUndefined();
    expect(await store.delete(grace, id)).toBe(false);
    expect((await store.list(grace)).items).toEqual([]);
  });

  it('keeps owners with awkward subjects apart', async () => {
    const subjects = [
      'https://idp.example.com/users/42',
      'user with spaces',
      'ÜNICODE-üser',
      'a'.repeat(255),
    ];
    for (const s of subjects) await store.create(newKey(spec(s, 'platform', ['viewer'])));
    for (const s of subjects) {
      const items = (await store.list(s)).items;
      expect(items.length).toBeGreaterThanOrEqual(1);
      expect(items.every((k) => k.spec.owner === s)).toBe(true);
    }
  });
});

describe('ApiKey CRD on the API server', () => {
  let kc: KubeConfig;
  let kubectl: string;
  let kubeconfig: string;
  let namespace: string;
  const gvr = (ns: string) => ({
    group: API_KEY_GROUP,
    version: API_KEY_VERSION,
    namespace: ns,
    plural: API_KEY_PLURAL,
  });

  beforeAll(async () => {
    ({ kc, kubectl, kubeconfig } = await kubeWithApiKeys());
    namespace = await freshNamespace(kc, 'keys-crd');
  });

  const refusal = async (body: ApiKey): Promise<string> => {
    const e = await customObjects(kc)
      .createNamespacedCustomObject({ ...gvr(namespace), body })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    // The API server's 422 Invalid: the CRD's schema or CEL rules refused it.
    expect((e as { code?: number }).code).toBe(422);
    return String((e as { body?: unknown }).body ?? e);
  };

  it('refuses keys that break the contract, with the reason', async () => {
    const good = spec('alice', 'platform', ['viewer']);
    expect(await refusal(newKey({ ...good, hash: 'ABC' }))).toMatch(/spec.hash/);
    expect(await refusal(newKey({ ...good, module: 'other' as Module }))).toMatch(/spec.module/);
    expect(await refusal(newKey({ ...good, roles: [] }))).toMatch(/spec.roles/);
    expect(await refusal(newKey({ ...spec('alice', 'bda', ['a']), roles: ['a', 'b'] }))).toMatch(
      /exactly one role/,
    );
    expect(await refusal(newKey({ ...good, start: 'tgb_abcd' }))).toMatch(/module's key prefix/);
    expect(await refusal(newKey({ ...good, expiresAt: 'tomorrow' }))).toMatch(/spec.expiresAt/);
    expect(await refusal(newKey({ ...good, rateLimit: { requests: 0, windowSeconds: 60 } }))).toMatch(
      /requests/,
    );
  });

  it('lists from its watch: keys another writer makes or deletes show, or go, without a call of its own', async () => {
    const store = kubeKeyStore(kc, namespace);
    const owner = uniqueOwner('watched');
    expect((await store.list(owner)).items).toEqual([]);
    // Another replica (or kubectl) creates a key: this store never wrote it.
    const made = newKey(spec(owner, 'platform', ['viewer'], { name: 'made elsewhere' }));
    await customObjects(kc).createNamespacedCustomObject({ ...gvr(namespace), body: made });
    const until = async (want: number) => {
      for (let i = 0; i < 100 && (await store.list(owner)).items.length !== want; i++)
        await new Promise((r) => setTimeout(r, 50));
      return (await store.list(owner)).items;
    };
    const listed = await until(1);
    expect(listed.map((k) => k.spec.name)).toEqual(['made elsewhere']);
    expect((await store.listEvery({ search: owner })).items.map((k) => k.metadata.name)).toEqual([
      made.metadata.name,
    ]);
    await customObjects(kc).deleteNamespacedCustomObject({ ...gvr(namespace), name: made.metadata.name });
    expect(await until(0)).toEqual([]);
  });

  it('keeps a key immutable and shows it with printer columns', async () => {
    const store = kubeKeyStore(kc, namespace);
    const created = await store.create(newKey(spec('alice', 'platform', ['viewer', 'models:inference'])));
    const name = created.metadata.name;
    const patch = await customObjects(kc)
      .patchNamespacedCustomObject({
        ...gvr(namespace),
        name,
        body: [{ op: 'replace', path: '/spec/roles', value: ['editor'] }],
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(String((patch as { body?: unknown })?.body ?? patch)).toMatch(/immutable/);

    const { stdout } = await run(kubectl, ['--kubeconfig', kubeconfig, '-n', namespace, 'get', 'apikeys']);
    const [header, row] = stdout.trim().split('\n');
    expect(header).toMatch(/^NAME\s+MODULE\s+ROLES\s+START\s+OWNER\s+LAST USED\s+AGE$/);
    expect(row).toContain(name);
    expect(row).toContain(created.spec.start);
    expect(row).toContain('platform');
  });
});

describe('KubeApiKeyStore with the API server unreachable', () => {
  it('answers 503 key_store_unavailable, never a wrong "not found"', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'gone', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'c', cluster: 'gone', user: 'u' }],
      currentContext: 'c',
    });
    const store = kubeKeyStore(kc, 'default');
    for (const attempt of [
      () => store.get('alice', newKeyId()),
      () => store.list('alice'),
      () => store.delete('alice', newKeyId()),
    ]) {
      await expect(attempt()).rejects.toMatchObject({ status: 503, code: 'key_store_unavailable' });
    }
  });
});
