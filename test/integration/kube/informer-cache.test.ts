import { CustomObjectsApi } from '@kubernetes/client-node';
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

describe('an informer cache whose first list fails half-way', () => {
  it('keeps nothing the list that succeeds no longer has: a key deleted meanwhile is gone', async () => {
    const { kc } = await kubeWithApiKeys();
    const namespace = await freshNamespace(kc, 'informer-retry');
    const api = kc.makeApiClient(CustomObjectsApi);
    const place = { group: API_KEY_GROUP, version: API_KEY_VERSION, namespace, plural: API_KEY_PLURAL };
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const key = generateKey('platform');
      const body = newApiKey(newKeyId(), {
        hash: hashKey(key),
        start: keyStart(key),
        module: 'platform',
        roles: ['viewer'],
        owner: 'alice',
      });
      await api.createNamespacedCustomObject({ ...place, body });
      made.push(body.metadata.name);
    }
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
