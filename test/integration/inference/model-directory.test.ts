import { randomBytes } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { kubeModels } from '../../../gateway/v2/model-directory.js';
import { cluster, createModel, namespace } from '../operator/support.js';

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
