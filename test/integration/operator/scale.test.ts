import { Redis } from 'ioredis';
import { redisKeys } from '../../../common/redis/schema.js';
import { createLogger } from '../../../common/logger.js';
import { kubeSources } from '../../../operator/kube-sources.js';
import { redis } from '../../harness/index.js';
import { waitUntil } from '../../harness/wait.js';
import {
  cluster,
  countKeys,
  createApiKeys,
  createModel,
  keyRef,
  modelFolder,
  PULLER_IMAGE,
  modelRef,
  namespace,
  npSettings,
  removeModelFolders,
  startOperator,
} from './support.js';

afterAll(removeModelFolders);

const MODELS = 200;
const KEYS = 2000;

describe('cold start at scale', () => {
  test(`${MODELS} Models and ${KEYS} ApiKeys reconciled from a cold start`, async () => {
    const c = await cluster();
    const ns = await namespace(c, 'op-scale');
    const redisUrl = (await redis('operator-scale')).url;
    const client = new Redis(redisUrl);
    const names = Array.from({ length: MODELS }, (_, i) => `model-s${i}`);
    const folders = await Promise.all(
      names.map((n) => modelFolder({ 'model-settings.json': npSettings(n), 'model.joblib': 'x' })),
    );
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < MODELS) {
          const i = next++;
          await createModel(c, ns, names[i]!, { storageUri: `file://${folders[i]}` });
        }
      }),
    );
    await createApiKeys(c, ns, KEYS);

    const operator = startOperator(c, ns, redisUrl);
    const t0 = performance.now();
    await operator.start();
    await operator.synced();
    try {
      // Every key is in the index once it is marked built; a Model waiting for a turn at checking
      // its store (a few at a time, by design) is served once its turn comes.
      expect(await countKeys(client, redisKeys.apiKey('*'))).toBe(KEYS);
      const loading = async () =>
        (
          (await c.custom.listNamespacedCustomObject({ ...modelRef, namespace: ns })) as {
            items: Array<{ status?: { phase?: string } }>;
          }
        ).items.filter((m) => m.status?.phase === 'Loading').length;
      await waitUntil('every Model served', async () => (await loading()) === MODELS, { timeoutMs: 120_000 });
      const seconds = (performance.now() - t0) / 1000;
      const deployments = await c.apps.listNamespacedDeployment({ namespace: ns });
      expect(deployments.items).toHaveLength(MODELS);
      process.stdout.write(
        `cold start: ${MODELS} Models + ${KEYS} ApiKeys reconciled in ${seconds.toFixed(1)} s\n`,
      );

      // The cache read them a page at a time (2,000 is four pages), and keeps no managedFields,
      // which every object on the API server carries.
      const raw = (await c.custom.getNamespacedCustomObject({
        ...keyRef,
        namespace: ns,
        name: String(
          (
            (await c.custom.listNamespacedCustomObject({ ...keyRef, namespace: ns, limit: 1 })) as {
              items: Array<{ metadata: { name: string } }>;
            }
          ).items[0]?.metadata.name,
        ),
      })) as { metadata: { managedFields?: unknown[] } };
      expect(raw.metadata.managedFields?.length).toBeGreaterThan(0);
      const keys = kubeSources(c.kc, createLogger('scale-cache', 'silent'), {
        pullerImage: PULLER_IMAGE,
        namespace: ns,
      }).apiKeys;
      await keys.start(() => undefined);
      try {
        const cached = keys.list();
        expect(cached).toHaveLength(KEYS);
        expect(cached.filter((k) => 'managedFields' in k.metadata)).toEqual([]);
      } finally {
        await keys.stop();
      }
    } finally {
      await operator.stop();
      client.disconnect();
      c.kc.close();
    }
  }, 300_000);
});
