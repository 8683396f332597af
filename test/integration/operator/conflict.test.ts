import { createLogger } from '../../../common/logger.js';
import {
  MODEL_GROUP,
  MODEL_PLURAL,
  MODEL_VERSION,
  modelSchema,
  type Model,
} from '../../../common/resources/model.js';
import { withConflictRetry } from '../../../operator/framework/controller.js';
import { KubeCustomResourceSource } from '../../../operator/framework/kube-source.js';
import { ConflictError, GoneError } from '../../../operator/framework/resource-source.js';
import { cluster, createModel, modelRef, namespace } from './support.js';

describe('writes with optimistic concurrency against the API server', () => {
  test('a stale status write is a 409 ConflictError; retried on a fresh read it succeeds; a deleted object is GoneError', async () => {
    const c = await cluster();
    const ns = await namespace(c, 'op-conflict');
    const source = new KubeCustomResourceSource<Model>(
      c.kc,
      { group: MODEL_GROUP, version: MODEL_VERSION, plural: MODEL_PLURAL },
      (raw) => modelSchema.parse(raw),
      createLogger('test', 'silent'),
      ns,
    );
    const stale = await createModel(c, ns, 'model-c', { storageUri: 's3://bucket/c' });
    // Someone else writes in between: the resourceVersion we hold is now stale.
    await c.custom.patchNamespacedCustomObject({
      ...modelRef,
      namespace: ns,
      name: 'model-c',
      body: [{ op: 'add', path: '/metadata/labels', value: { team: 'a' } }],
    });
    const status: Model['status'] = { phase: 'Pending', observedGeneration: 1 };
    await expect(source.updateStatus({ ...stale, status })).rejects.toBeInstanceOf(ConflictError);

    let reads = 0;
    const written = await withConflictRetry(
      stale,
      async () => {
        reads++;
        return source.read({ namespace: ns, name: 'model-c' });
      },
      (m) => source.updateStatus({ ...m, status }),
      (e) => e instanceof ConflictError,
    );
    expect(reads).toBe(1);
    expect(written?.status).toEqual(status);
    expect(written?.metadata.labels).toEqual({ team: 'a' });

    await c.custom.deleteNamespacedCustomObject({ ...modelRef, namespace: ns, name: 'model-c' });
    await expect(source.updateStatus({ ...written!, status })).rejects.toBeInstanceOf(GoneError);
    expect(await source.read({ namespace: ns, name: 'model-c' })).toBeUndefined();
    c.kc.close();
  });
});
