import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { generateKey, hashKey, keyStart } from '../../../common/apikey/format.js';
import { InformerCache } from '../../../common/kube/informer-cache.js';
import { createLogger } from '../../../common/logger.js';
import {
  API_KEY_GROUP,
  API_KEY_PLURAL,
  API_KEY_VERSION,
  newApiKey,
  newKeyId,
} from '../../../common/resources/apikey.js';
import { freshNamespace, kubeWithApiKeys } from '../keys/fixtures.js';

const names = (raw: unknown): string | undefined => (raw as { metadata?: { name?: string } }).metadata?.name;

/** An ApiKey made in `namespace`, as the management API would make one; its name. */
async function makeKey(api: CustomObjectsApi, namespace: string): Promise<string> {
  const key = generateKey('platform');
  const body = newApiKey(newKeyId(), {
    hash: hashKey(key),
    start: keyStart(key),
    module: 'platform',
    roles: ['viewer'],
    owner: 'alice',
  });
  await api.createNamespacedCustomObject({ ...placeIn(namespace), body });
  return body.metadata.name;
}

const placeIn = (namespace: string) => ({
  group: API_KEY_GROUP,
  version: API_KEY_VERSION,
  namespace,
  plural: API_KEY_PLURAL,
});

describe('an informer cache whose first list fails half-way', () => {
  it('keeps nothing the list that succeeds no longer has: a key deleted meanwhile is gone', async () => {
    const { kc } = await kubeWithApiKeys();
    const namespace = await freshNamespace(kc, 'informer-retry');
    const api = kc.makeApiClient(CustomObjectsApi);
    const place = placeIn(namespace);
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push(await makeKey(api, namespace));
    let attempts = 0;
    let firstPage: string | undefined;
    const cache = new InformerCache<string>(
      kc,
      `/apis/${API_KEY_GROUP}/${API_KEY_VERSION}/namespaces/${namespace}/${API_KEY_PLURAL}`,
      // One object a page; the first attempt's second page fails, after its first was taken.
      async (page) => {
        const answer = (await api.listNamespacedCustomObject({ ...place, ...page, limit: 1 })) as {
          items: unknown[];
        };
        if (page._continue === undefined) {
          attempts++;
          if (attempts === 1) {
            firstPage = names(answer.items[0]);
            await api.deleteNamespacedCustomObject({ ...place, name: firstPage ?? '' });
          }
        } else if (attempts === 1) throw new Error('the API server went away half-way through the list');
        return answer;
      },
      names,
      createLogger('informer-test', 'silent'),
    );
    try {
      await cache.start(() => undefined);
      expect(attempts).toBe(2);
      expect(firstPage).toBeDefined();
      expect(cache.list().sort()).toEqual(made.filter((n) => n !== firstPage).sort());
    } finally {
      await cache.stop();
    }
  });
});

describe('an informer cache stopped while it lists', () => {
  it('opens no watch: what the list held and what is made afterwards never reach it', async () => {
    const { kc } = await kubeWithApiKeys();
    const namespace = await freshNamespace(kc, 'informer-stop');
    const api = kc.makeApiClient(CustomObjectsApi);
    const place = placeIn(namespace);
    for (let i = 0; i < 2; i++) await makeKey(api, namespace);
    let stopping: Promise<void> | undefined;
    const cache: InformerCache<string> = new InformerCache<string>(
      kc,
      `/apis/${API_KEY_GROUP}/${API_KEY_VERSION}/namespaces/${namespace}/${API_KEY_PLURAL}`,
      // Stopped (a term given up, a Lease lost) while its first page is on the way.
      async (page) => {
        const answer = await api.listNamespacedCustomObject({ ...place, ...page, limit: 1 });
        stopping ??= cache.stop();
        return answer;
      },
      names,
      createLogger('informer-test', 'silent'),
    );
    await cache.start(() => undefined);
    await stopping;
    await makeKey(api, namespace);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(cache.list()).toEqual([]);
  });
});

describe('an informer cache with a predicate', () => {
  it('takes every update but announces only those the predicate says changed what its reader reads', async () => {
    const { kc } = await kubeWithApiKeys();
    const namespace = await freshNamespace(kc, 'informer-predicate');
    const api = kc.makeApiClient(CustomObjectsApi);
    const place = placeIn(namespace);
    // What this reader reads of a key: its name, its roles and one label.
    interface Read {
      name: string;
      roles: string[];
      tier: string | undefined;
      version: string | undefined;
    }
    const read = (raw: unknown): Read | undefined => {
      const o = raw as {
        metadata?: { name?: string; labels?: Record<string, string>; resourceVersion?: string };
        spec?: { roles?: string[] };
      };
      if (o.metadata?.name === undefined) return undefined;
      return {
        name: o.metadata.name,
        roles: o.spec?.roles ?? [],
        tier: o.metadata.labels?.tier,
        version: o.metadata.resourceVersion,
      };
    };
    const events: string[] = [];
    const cache = new InformerCache<Read>(
      kc,
      `/apis/${API_KEY_GROUP}/${API_KEY_VERSION}/namespaces/${namespace}/${API_KEY_PLURAL}`,
      (page) => api.listNamespacedCustomObject({ ...place, ...page }),
      read,
      createLogger('informer-test', 'silent'),
    );
    let name = '';
    const patch = (p: object) =>
      api.patchNamespacedCustomObject(
        { ...place, name, body: p },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    const settled = async (what: () => boolean) => {
      const deadline = Date.now() + 10_000;
      while (!what() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(what()).toBe(true);
    };
    try {
      await cache.start((ref, deleted) => events.push(`${ref.name}${deleted ? ' gone' : ''}`), {
        changed: (a, b) => a.tier !== b.tier || a.roles.join() !== b.roles.join(),
      });
      name = await makeKey(api, namespace);
      await settled(() => events.length === 1);
      // An annotation and another label: the cache takes the new version, nobody is told.
      const first = cache.get({ namespace, name })?.version;
      await patch({ metadata: { annotations: { note: 'x' }, labels: { other: 'y' } } });
      await settled(() => cache.get({ namespace, name })?.version !== first);
      // What the reader reads: announced.
      await patch({ metadata: { labels: { tier: 'gold' } } });
      await settled(() => events.length === 2);
      expect(cache.get({ namespace, name })?.tier).toBe('gold');
      await api.deleteNamespacedCustomObject({ ...place, name });
      await settled(() => events.length === 3);
      expect(events).toEqual([name, name, `${name} gone`]);
    } finally {
      await cache.stop();
    }
  });
});
