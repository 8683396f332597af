import { bounded, MAX_KEPT_OBJECT_BYTES } from '../../../operator/framework/kube-source.js';

/**
 * A team may label its own Deployments and Services as a model's or a workflow's, each up to the
 * API server's 1.5 MB: the operator's caches keep such an object cut down to what identifies it.
 */
describe('what the labelled caches keep of an object', () => {
  const deployment = (envBytes: number) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'model-x',
      namespace: 'team-t',
      uid: 'u-1',
      resourceVersion: '42',
      generation: 3,
      creationTimestamp: '2026-01-01T00:00:00Z',
      finalizers: ['tollgate.dev/route', 'example.com/other'],
      labels: {
        'app.kubernetes.io/managed-by': 'tollgate',
        'tollgate.dev/model': 'model-x',
        'team.example/owner': 'mallory',
        [`tollgate.dev/${'k'.repeat(60)}`]: 'v'.repeat(63),
      },
      annotations: { 'tollgate.dev/template-hash': 'abc', note: 'n'.repeat(100) },
    },
    spec: {
      replicas: 2,
      template: {
        spec: { containers: [{ name: 'c', env: [{ name: 'BIG', value: 'x'.repeat(envBytes) }] }] },
      },
    },
    status: { readyReplicas: 1, observedGeneration: 3 },
  });

  it('an object of the size Tollgate makes is kept whole, as it came', () => {
    const small = deployment(10_000);
    expect(bounded(small, 'deployments')).toBe(small);
  });

  it('one past the bound keeps its identity, Tollgate’s labels and annotations, replicas and status, and nothing else', () => {
    const large = deployment(1_400_000);
    const kept = bounded(large, 'deployments') as ReturnType<typeof deployment>;
    expect(kept).not.toBe(large);
    expect(JSON.stringify(kept).length).toBeLessThan(4_096);
    expect(kept).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'model-x',
        namespace: 'team-t',
        uid: 'u-1',
        resourceVersion: '42',
        generation: 3,
        creationTimestamp: '2026-01-01T00:00:00Z',
        finalizers: ['tollgate.dev/route'],
        labels: {
          'app.kubernetes.io/managed-by': 'tollgate',
          'tollgate.dev/model': 'model-x',
          [`tollgate.dev/${'k'.repeat(60)}`]: 'v'.repeat(63),
        },
        annotations: { 'tollgate.dev/template-hash': 'abc' },
      },
      spec: { replicas: 2 },
      status: { readyReplicas: 1, observedGeneration: 3 },
    });
  });

  it('labels past the count or length kept are dropped: a cut-down object is small whatever it carried', () => {
    const large = deployment(MAX_KEPT_OBJECT_BYTES);
    const many: Record<string, string> = {};
    for (let i = 0; i < 5_000; i++) many[`tollgate.dev/l${i}`] = 'v';
    many['tollgate.dev/long'] = 'x'.repeat(2_000);
    large.metadata.labels = { ...large.metadata.labels, ...many };
    const kept = bounded(large, 'deployments') as ReturnType<typeof deployment>;
    expect(Object.keys(kept.metadata.labels)).toHaveLength(32);
    expect(kept.metadata.labels['tollgate.dev/long']).toBeUndefined();
    expect(JSON.stringify(kept).length).toBeLessThan(4_096);
  });

  it('a Service past the bound keeps where it is called and what it selects; a selector too large to keep selects nothing', () => {
    const service = (selector: Record<string, string>) => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'scorer',
        namespace: 'team-t',
        labels: { 'tollgate.dev/workflow': 'fraud', 'tollgate.dev/service': 'scorer' },
        annotations: { 'tollgate.dev/port': 'http', 'example.com/blob': 'b'.repeat(200_000) },
      },
      spec: {
        type: 'ClusterIP',
        clusterIP: '10.96.0.80',
        clusterIPs: ['10.96.0.80'],
        selector,
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP', appProtocol: 'http' }],
        sessionAffinity: 'None',
      },
    });
    expect(bounded(service({ app: 'scorer' }), 'services')).toEqual({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'scorer',
        namespace: 'team-t',
        labels: { 'tollgate.dev/workflow': 'fraud', 'tollgate.dev/service': 'scorer' },
        annotations: { 'tollgate.dev/port': 'http' },
      },
      spec: {
        type: 'ClusterIP',
        clusterIP: '10.96.0.80',
        clusterIPs: ['10.96.0.80'],
        selector: { app: 'scorer' },
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      },
    });
    const huge: Record<string, string> = {};
    for (let i = 0; i < 2_000; i++) huge[`k${i}`] = 'v'.repeat(40);
    const kept = bounded(service(huge), 'services') as { spec: { selector?: unknown } };
    expect(kept.spec.selector).toBeUndefined();
    expect(JSON.stringify(kept).length).toBeLessThan(4_096);
  });
});
