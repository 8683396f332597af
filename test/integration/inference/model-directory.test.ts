import { randomBytes } from 'node:crypto';
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { jest } from '@jest/globals';
import { kubeModels } from '../../../gateway/v2/model-directory.js';
import { cluster, createModel, modelRef, namespace } from '../operator/support.js';

/**
 * On a cluster, the gateway tells "not ready" (503) from "no such model" (404), and finds a model's
 * workflow, from the Model resources of every namespace; it lists them for the repository index.
 */
describe('kubeModels: Models on the real API server', () => {
  test('a Model in any namespace is found with its workflow; others are unknown', async () => {
    const c = await cluster();
    const ns = await namespace(c, 'v2-models');
    const suffix = randomBytes(3).toString('hex');
    await createModel(c, ns, `model-wf-${suffix}`, { storageUri: 's3://b/p', workflow: 'wf-7' });
    await createModel(c, ns, `model-plain-${suffix}`, { storageUri: 's3://b/q' });
    const directory = kubeModels(c.kc);
    expect(await directory.find(`model-wf-${suffix}`)).toEqual({ workflow: 'wf-7' });
    expect(await directory.find(`model-plain-${suffix}`)).toEqual({ workflow: undefined });
    expect(await directory.find(`model-none-${suffix}`)).toBeUndefined();
    const listed = (await directory.list()).filter((m) => m.name.endsWith(suffix));
    expect(listed.sort((a, b) => (a.name < b.name ? -1 : 1))).toEqual([
      { name: `model-plain-${suffix}`, workflow: undefined },
      { name: `model-wf-${suffix}`, workflow: 'wf-7' },
    ]);
  });

  test('names made up per call cost one listing per two seconds, not an API server call each', async () => {
    const c = await cluster();
    const lists = jest.spyOn(CustomObjectsApi.prototype, 'listClusterCustomObject');
    try {
      const directory = kubeModels(c.kc);
      const answers = await Promise.all(
        Array.from({ length: 200 }, () => directory.find(`model-${randomBytes(6).toString('hex')}`)),
      );
      expect(answers.every((a) => a === undefined)).toBe(true);
      for (let i = 0; i < 50; i++) await directory.find(`model-${randomBytes(6).toString('hex')}`);
      expect(lists).toHaveBeenCalledTimes(1);
    } finally {
      lists.mockRestore();
    }
  });

  test('a name two namespaces claim is answered by the Model that holds it, not the one refused for it', async () => {
    const c = await cluster();
    const [holder, squat] = [await namespace(c, 'v2-holder'), await namespace(c, 'v2-squat')];
    const name = `model-held-${randomBytes(3).toString('hex')}`;
    await createModel(c, squat, name, { storageUri: 's3://b/s', workflow: 'wf-squat' });
    await createModel(c, holder, name, { storageUri: 's3://b/h', workflow: 'wf-holder' });
    // As the operator writes it for the later one (here the squat, whichever was listed first).
    await c.custom.patchNamespacedCustomObjectStatus(
      {
        ...modelRef,
        namespace: squat,
        name,
        body: {
          status: {
            phase: 'Failed',
            conditions: [
              {
                type: 'Ready',
                status: 'False',
                reason: 'NameTaken',
                message: 'taken',
                lastTransitionTime: '2026-01-01T00:00:00Z',
              },
            ],
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const directory = kubeModels(c.kc);
    expect(await directory.find(name)).toEqual({ workflow: 'wf-holder' });
    expect((await directory.list()).filter((m) => m.name === name)).toEqual([
      { name, workflow: 'wf-holder' },
    ]);
  });

  test('an unreachable API server is a 503, not a 404', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'gone', server: 'https://127.0.0.1:9', skipTLSVerify: true }],
      users: [{ name: 'u', token: 'x' }],
      contexts: [{ name: 'c', cluster: 'gone', user: 'u' }],
      currentContext: 'c',
    });
    await expect(kubeModels(kc).find('model-x')).rejects.toMatchObject({
      status: 503,
      code: 'model_directory_unavailable',
    });
    await expect(kubeModels(kc).list()).rejects.toMatchObject({
      status: 503,
      code: 'model_directory_unavailable',
    });
  });
});
