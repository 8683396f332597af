// After `helm uninstall` no operator is left to take its finalizers off: the chart's hook runs
// `tollgate release-finalizers`, or a namespace holding a routed Service, a Model or an ApiKey would
// stay Terminating for ever. On a real API server, with other controllers' finalizers beside ours.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { V1Service } from '@kubernetes/client-node';
import { API_KEY_FINALIZER } from '../../../common/resources/apikey.js';
import { MODEL_FINALIZER } from '../../../operator/controllers/model/reconciler.js';
import { releaseFinalizers } from '../../../operator/release-finalizers.js';
import { ROUTE_FINALIZER } from '../../../operator/route-hold.js';
import { apiKeyBody, cluster, keyRef, modelRef, namespace, type Cluster } from './support.js';
import { aModel } from '../../builders/resources.js';

const OTHERS = 'example.com/keep';

describe('release-finalizers, after the operator is gone', () => {
  let c: Cluster;
  let ns: string;
  let elsewhere: string;
  let keyName: string;

  beforeAll(async () => {
    c = await cluster();
    [ns, elsewhere] = [await namespace(c, 'release'), await namespace(c, 'release-other')];
    for (const where of [ns, elsewhere]) {
      await c.custom.createNamespacedCustomObject({
        ...modelRef,
        namespace: where,
        body: aModel(
          'model-left',
          { storageUri: 's3://bucket/left' },
          { finalizers: [MODEL_FINALIZER, OTHERS] },
        ),
      });
      await c.core.createNamespacedService({
        namespace: where,
        body: {
          metadata: { name: 'routed', finalizers: [ROUTE_FINALIZER] },
          spec: { ports: [{ port: 80 }] },
        } as V1Service,
      });
    }
    const key = apiKeyBody();
    key.body.metadata.finalizers = [API_KEY_FINALIZER];
    keyName = key.body.metadata.name;
    await c.custom.createNamespacedCustomObject({ ...keyRef, namespace: ns, body: key.body });
  });

  afterAll(async () => {
    for (const where of [ns, elsewhere])
      await c?.custom
        .patchNamespacedCustomObject({
          ...modelRef,
          namespace: where,
          name: 'model-left',
          body: [{ op: 'remove', path: '/metadata/finalizers' }],
        })
        .catch(() => undefined);
    c?.kc.close();
  });

  const finalizersOf = async (ref: typeof modelRef, where: string, name: string) =>
    (
      (await c.custom.getNamespacedCustomObject({ ...ref, namespace: where, name })) as {
        metadata: { finalizers?: string[] };
      }
    ).metadata.finalizers ?? [];

  it('takes the operator’s finalizers off in the namespace it is given, and nothing else', async () => {
    const { released, failed } = await releaseFinalizers(c.kc, ns);
    expect(failed).toEqual([]);
    expect(released.sort()).toEqual(
      [`apikey ${ns}/${keyName}`, `model ${ns}/model-left`, `service ${ns}/routed`].sort(),
    );
    expect(await finalizersOf(modelRef, ns, 'model-left')).toEqual([OTHERS]);
    expect(await finalizersOf(keyRef, ns, keyName)).toEqual([]);
    expect(
      (await c.core.readNamespacedService({ namespace: ns, name: 'routed' })).metadata?.finalizers ?? [],
    ).toEqual([]);
    // Another namespace is left as it was.
    expect(await finalizersOf(modelRef, elsewhere, 'model-left')).toEqual([MODEL_FINALIZER, OTHERS]);
    // Run again: nothing left to release.
    expect((await releaseFinalizers(c.kc, ns)).released).toEqual([]);
  });

  // (Not run without a namespace here: the API server is every test file's, and other files'
  // operators hold finalizers on theirs.)
  it('in the other namespace too; the ApiKey and the Service then go when deleted', async () => {
    const { failed, released } = await releaseFinalizers(c.kc, elsewhere);
    expect(failed).toEqual([]);
    expect(released).toEqual(
      expect.arrayContaining([`model ${elsewhere}/model-left`, `service ${elsewhere}/routed`]),
    );
    await c.custom.deleteNamespacedCustomObject({ ...keyRef, namespace: ns, name: keyName });
    await c.core.deleteNamespacedService({ namespace: elsewhere, name: 'routed' });
    await expect(
      c.custom.getNamespacedCustomObject({ ...keyRef, namespace: ns, name: keyName }),
    ).rejects.toMatchObject({
      code: 404,
    });
    await expect(
      c.core.readNamespacedService({ namespace: elsewhere, name: 'routed' }),
    ).rejects.toMatchObject({
      code: 404,
    });
  });
});
