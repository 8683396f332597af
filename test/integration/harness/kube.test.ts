import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { kube } from '../../harness/index.js';

const run = promisify(execFile);

// A group of its own, so this smoke test never meets the product's CRDs.
const group = 'smoke.harness.tollgate.dev';
const crd: V1CustomResourceDefinition = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `widgets.${group}` },
  spec: {
    group,
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: { size: { type: 'integer', minimum: 1 } },
                required: ['size'],
              },
            },
          },
        },
      },
    ],
  },
};

describe('harness: kube-apiserver + etcd', () => {
  it('answers kubectl get --raw /version with the pinned version', async () => {
    const k = await kube();
    const { stdout } = await run(k.kubectl, ['--kubeconfig', k.kubeconfig, 'get', '--raw', '/version']);
    const version = JSON.parse(stdout) as { gitVersion: string; major: string; minor: string };
    expect(version.gitVersion).toBe('v1.34.4');
    expect(version.major).toBe('1');
    expect(version.minor).toBe('34');
  });

  it('creates a CRD and an object of it through @kubernetes/client-node', async () => {
    const k = await kube();
    const kc = new KubeConfig();
    kc.loadFromFile(k.kubeconfig);
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    await ext.createCustomResourceDefinition({ body: crd });

    // The CRD serves its kind only once Established.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const got = await ext.readCustomResourceDefinition({ name: `widgets.${group}` });
      if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error('CRD never became Established');
      await new Promise((r) => setTimeout(r, 100));
    }

    const objects = kc.makeApiClient(CustomObjectsApi);
    const gvr = { group, version: 'v1', namespace: 'default', plural: 'widgets' };
    await objects.createNamespacedCustomObject({
      ...gvr,
      body: { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 3 } },
    });
    const read = (await objects.getNamespacedCustomObject({ ...gvr, name: 'w1' })) as {
      spec: { size: number };
    };
    expect(read.spec.size).toBe(3);

    // The structural schema is enforced by the real apiserver.
    await expect(
      objects.createNamespacedCustomObject({
        ...gvr,
        body: { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w2' }, spec: { size: 0 } },
      }),
    ).rejects.toThrow(/422|Invalid/);

    const { stdout } = await run(k.kubectl, [
      '--kubeconfig',
      k.kubeconfig,
      'get',
      `widgets.${group}`,
      '-o',
      'name',
    ]);
    expect(stdout.trim()).toBe(`widget.${group}/w1`);
  });
});
