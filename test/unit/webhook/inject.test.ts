import { describe, expect, it } from '@jest/globals';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { X509Certificate } from 'node:crypto';
import {
  issueWebhookCertificates,
  notAfter,
  serviceDnsNames,
} from '../../../operator/webhook/certificates.js';
import {
  INJECTED_ANNOTATION,
  planInjection,
  planUpdate,
  SIDECAR_CONTAINER,
  type JsonPatchOp,
} from '../../../operator/webhook/inject.js';
import { SIDECAR_OPERATIONS_PORT } from '../../../operator/serving/model-workload.js';
import { parseAppProbes } from '../../../common/sidecar-probes.js';
import { passedTracingEnv } from '../../../common/tracing/settings.js';
import {
  credentialEnv,
  REPORT_KEY_ENV,
  SIDECAR_SECRET,
} from '../../../operator/webhook/sidecar-credentials.js';

const cfg = {
  image: 'tollgate/tollgate:dev',
  redisUrl: 'redis://tollgate-sidecar:$(TOLLGATE_REDIS_PASSWORD)@redis.tollgate-system.svc:6379',
  credentialEnv: credentialEnv(['TOLLGATE_REDIS_PASSWORD', REPORT_KEY_ENV]),
  trustedKeys: '{"keys":[{"kty":"EC","crv":"P-256","x":"x","y":"y","kid":"k"}]}',
};

function pod(over: {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  containers?: V1Container[];
  initContainers?: V1Container[];
}): V1Pod {
  return {
    metadata: {
      name: 'scorer-1',
      labels: { 'tollgate.dev/inject': 'true', ...over.labels },
      ...(over.annotations ? { annotations: over.annotations } : {}),
    },
    spec: {
      containers: over.containers ?? [
        {
          name: 'app',
          image: 'app:1',
          ports: [{ name: 'http', containerPort: 8000 }],
          readinessProbe: { httpGet: { path: '/health', port: 'http' }, periodSeconds: 1 },
          livenessProbe: { tcpSocket: { port: 8000 } },
          startupProbe: { exec: { command: ['true'] } },
        },
      ],
      ...(over.initContainers ? { initContainers: over.initContainers } : {}),
    },
  };
}

const workflowPod = (over: Parameters<typeof pod>[0] = {}) =>
  pod({
    ...over,
    labels: { 'tollgate.dev/workflow': 'fraud', 'tollgate.dev/service': 'scorer', ...over.labels },
  });

function injected(p: V1Pod) {
  const plan = planInjection(p, cfg);
  if (plan.kind !== 'inject') throw new Error(`not injected: ${JSON.stringify(plan)}`);
  const sidecarOp = plan.patch.find((o) => o.path.startsWith('/spec/initContainers')) as JsonPatchOp;
  const sidecar = (Array.isArray(sidecarOp.value) ? sidecarOp.value[0] : sidecarOp.value) as V1Container;
  return { plan, sidecar, sidecarOp };
}

describe('the sidecar injection plan', () => {
  it('gives the sidecar the operator’s tracing settings, and never its collector credential', () => {
    const env = passedTracingEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer c0llector-t0ken',
    });
    const plan = planInjection(workflowPod(), { ...cfg, tracingEnv: env });
    if (plan.kind !== 'inject') throw new Error('not injected');
    const op = plan.patch.find((o) => o.path.startsWith('/spec/initContainers')) as JsonPatchOp;
    const sidecar = (Array.isArray(op.value) ? op.value[0] : op.value) as V1Container;
    const otel = (sidecar.env ?? []).filter((e) => e.name.startsWith('OTEL_'));
    expect(otel).toEqual([
      { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://otel-collector.observability:4318' },
      { name: 'OTEL_TRACES_SAMPLER', value: 'parentbased_traceidratio' },
      { name: 'OTEL_TRACES_SAMPLER_ARG', value: '0.1' },
    ]);
    expect(JSON.stringify(plan.patch)).not.toContain('c0llector-t0ken');
    // None set: the sidecar traces nothing, as the operator does.
    expect((injected(workflowPod()).sidecar.env ?? []).some((e) => e.name.startsWith('OTEL_'))).toBe(false);
  });

  it('adds a native sidecar that takes the workload port on the pod IP, the workload on loopback', () => {
    const { plan, sidecar, sidecarOp } = injected(workflowPod());
    expect(plan.guards).toBe('workflow service fraud/scorer');
    expect(sidecarOp).toMatchObject({ op: 'add', path: '/spec/initContainers' });
    expect(sidecar.name).toBe(SIDECAR_CONTAINER);
    expect(sidecar.restartPolicy).toBe('Always');
    expect(sidecar.image).toBe(cfg.image);
    expect(sidecar.args).toEqual([
      'sidecar',
      '--upstream',
      'http://127.0.0.1:8000',
      '--host',
      '$(POD_IP)',
      '--port',
      '8000',
      '--operations-port',
      String(SIDECAR_OPERATIONS_PORT),
      '--workflow',
      'fraud',
      '--service',
      'scorer',
    ]);
    const env = Object.fromEntries((sidecar.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
    expect(env['TOLLGATE_REDIS_URL']).toBe(cfg.redisUrl);
    // The password is read from the pod's namespace, before the URL that names it; never in the spec.
    const names = (sidecar.env ?? []).map((e) => e.name);
    expect(names.indexOf('TOLLGATE_REDIS_PASSWORD')).toBeLessThan(names.indexOf('TOLLGATE_REDIS_URL'));
    expect(env['TOLLGATE_REDIS_PASSWORD']).toEqual({
      secretKeyRef: { name: SIDECAR_SECRET, key: 'TOLLGATE_REDIS_PASSWORD' },
    });
    // So is the namespace's load-report key.
    expect(env[REPORT_KEY_ENV]).toEqual({ secretKeyRef: { name: SIDECAR_SECRET, key: REPORT_KEY_ENV } });
    // What the sidecar believes: the public keys, given here, never read from Redis.
    expect(env['TOLLGATE_TRUSTED_KEYS']).toBe(cfg.trustedKeys);
    expect(env['POD_IP']).toEqual({ fieldRef: { fieldPath: 'status.podIP' } });
    // Its namespace from the API server, not from anything the pod's spec says: grants are bound to it.
    expect(env['TOLLGATE_POD_NAMESPACE']).toEqual({ fieldRef: { fieldPath: 'metadata.namespace' } });
    // One per guarded pod: it runs with the heap settings the sidecar bench measures.
    expect(env['NODE_OPTIONS']).toBe('--max-semi-space-size=1');
    // What its calls may hold fits beside its own memory under the container's limit.
    expect(Number(env['TOLLGATE_HELD_BYTES_LIMIT'])).toBe(48 * 1024 * 1024);
    expect(sidecar.resources?.limits?.['memory']).toBe('256Mi');
    expect(sidecar.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: SIDECAR_OPERATIONS_PORT });
    expect(sidecar.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true });
    expect(plan.patch).toContainEqual({
      op: 'add',
      path: '/metadata/annotations',
      value: { [INJECTED_ANNOTATION]: 'workflow service fraud/scorer' },
    });
  });

  it('points the workload’s probes on its port at the sidecar, which runs the originals on loopback', () => {
    const { plan, sidecar } = injected(workflowPod());
    const replaced = plan.patch.filter((o) => o.op === 'replace');
    expect(replaced).toEqual([
      {
        op: 'replace',
        path: '/spec/containers/0/readinessProbe',
        value: {
          periodSeconds: 1,
          httpGet: { path: '/app-health/app/ready', port: SIDECAR_OPERATIONS_PORT, scheme: 'HTTP' },
        },
      },
      {
        op: 'replace',
        path: '/spec/containers/0/livenessProbe',
        value: { httpGet: { path: '/app-health/app/live', port: SIDECAR_OPERATIONS_PORT, scheme: 'HTTP' } },
      },
    ]);
    // The exec probe is the workload's own business and stays as it was.
    const probes = parseAppProbes(sidecar.env?.find((e) => e.name === 'TOLLGATE_APP_PROBES')?.value);
    expect(probes).toEqual({
      'app/ready': { httpGet: { path: '/health', port: 8000, httpHeaders: [] }, timeoutSeconds: 1 },
      'app/live': { tcpSocket: { port: 8000 }, timeoutSeconds: 1 },
    });
  });

  it('guards a Model’s pod as that model, its runtime and puller started after it, with the model’s workflow', () => {
    const { plan, sidecar, sidecarOp } = injected(
      pod({
        labels: { 'tollgate.dev/model': 'model-iris' },
        annotations: { 'tollgate.dev/workflow': 'fraud' },
        containers: [
          {
            name: 'mlserver',
            image: 'mlserver',
            ports: [
              { name: 'http', containerPort: 8080 },
              { name: 'grpc', containerPort: 8081 },
            ],
            readinessProbe: { httpGet: { path: '/v2/models/model-iris/ready', port: 'http' } },
          },
          // The puller (operator/serving/model-workload.ts): no ports, no probes.
          { name: 'pull', image: 'tollgate/tollgate:dev' },
        ],
      }),
    );
    expect(plan.guards).toBe('model model-iris');
    // The pod's only init container: a native sidecar, started before the runtime and the puller.
    expect(sidecarOp).toMatchObject({ op: 'add', path: '/spec/initContainers' });
    // The runtime's gRPC port is the sidecar's too (V2 over gRPC, checked as over HTTP).
    expect(sidecar.args?.slice(-6)).toEqual([
      '--model',
      'model-iris',
      '--workflow',
      'fraud',
      '--grpc-port',
      '8081',
    ]);
    expect(sidecar.args).toContain('http://127.0.0.1:8080');
    expect(plan.patch).toContainEqual({
      op: 'add',
      path: '/metadata/annotations/tollgate.dev~1injected',
      value: 'model model-iris',
    });
  });

  it('answers gRPC for a model only: a workflow service’s port named grpc is its own protocol', () => {
    const { sidecar } = injected(
      workflowPod({
        containers: [
          {
            name: 'app',
            image: 'app',
            ports: [
              { name: 'http', containerPort: 8000 },
              { name: 'grpc', containerPort: 8081 },
            ],
          },
        ],
      }),
    );
    expect(sidecar.args).not.toContain('--grpc-port');
  });

  it('takes the port from tollgate.dev/port, by number or name', () => {
    const byNumber = injected(workflowPod({ annotations: { 'tollgate.dev/port': '9000' } }));
    expect(byNumber.sidecar.args).toContain('http://127.0.0.1:9000');
    // The probes on 8000 are no longer the guarded port's: left alone.
    expect(byNumber.plan.patch.filter((o) => o.op === 'replace')).toEqual([]);
    const byName = injected(workflowPod({ annotations: { 'tollgate.dev/port': 'http' } }));
    expect(byName.sidecar.args).toContain('http://127.0.0.1:8000');
  });

  it('leaves pods alone that did not ask', () => {
    const unlabelled = workflowPod();
    unlabelled.metadata!.labels!['tollgate.dev/inject'] = 'false';
    expect(planInjection(unlabelled, cfg).kind).toBe('skip');
  });

  it('refuses a pod that brings a container of the sidecar’s name: it would look guarded and not be', () => {
    for (const p of [
      workflowPod({ initContainers: [{ name: SIDECAR_CONTAINER, image: 'mine' }] }),
      workflowPod({
        containers: [{ name: SIDECAR_CONTAINER, image: 'mine', ports: [{ containerPort: 80 }] }],
      }),
    ]) {
      const plan = planInjection(p, cfg);
      expect(plan).toMatchObject({ kind: 'refuse' });
      expect(plan.kind === 'refuse' ? plan.reason : '').toMatch(/already named "tollgate".*rename/);
    }
  });

  it('refuses to guard a pod while the installation names no Redis URL for sidecars', () => {
    const plan = planInjection(workflowPod(), { ...cfg, redisUrl: undefined });
    expect(plan).toMatchObject({ kind: 'refuse' });
    expect(plan.kind === 'refuse' ? plan.reason : '').toMatch(/sidecar\.redisUrl/);
  });

  it('refuses a pod that asked to be guarded and cannot be, saying what to set', () => {
    const refused = (p: V1Pod) => {
      const plan = planInjection(p, cfg);
      expect(plan.kind).toBe('refuse');
      return plan.kind === 'refuse' ? plan.reason : '';
    };
    expect(refused(pod({}))).toMatch(/tollgate\.dev\/workflow and tollgate\.dev\/service/);
    expect(refused(pod({ labels: { 'tollgate.dev/workflow': 'fraud' } }))).toMatch(/tollgate\.dev\/service/);
    expect(refused(workflowPod({ containers: [{ name: 'app', image: 'x' }] }))).toMatch(
      /set the annotation tollgate\.dev\/port/,
    );
    expect(refused(workflowPod({ annotations: { 'tollgate.dev/port': 'nope' } }))).toMatch(
      /tollgate\.dev\/port is "nope"/,
    );
    expect(
      refused(workflowPod({ annotations: { 'tollgate.dev/port': String(SIDECAR_OPERATIONS_PORT) } })),
    ).toMatch(/the sidecar's own/);
    expect(refused(pod({ labels: { 'tollgate.dev/model': 'Iris' } }))).toMatch(/not a model name/);
    const onHost = workflowPod({});
    expect(
      refused({
        ...onHost,
        spec: { ...onHost.spec, containers: onHost.spec?.containers ?? [], hostNetwork: true },
      }),
    ).toMatch(/host-network pod.*drop hostNetwork/);
    expect(refused(pod({ labels: { 'tollgate.dev/workflow': 'a:b', 'tollgate.dev/service': 's' } }))).toMatch(
      /not a workflow id/,
    );
  });
});

describe('the webhook certificates', () => {
  it('are a CA and a serving certificate for the Service’s names, signed by it', () => {
    const now = new Date();
    const c = issueWebhookCertificates({
      service: 'tg-webhook',
      namespace: 'tg',
      validityMs: 3_600_000,
      now,
    });
    const ca = new X509Certificate(c.ca);
    const cert = new X509Certificate(c.cert);
    expect(ca.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkIssued(ca)).toBe(true);
    for (const name of serviceDnsNames('tg-webhook', 'tg')) expect(cert.checkHost(name)).toBe(name);
    expect(cert.checkHost('other.tg.svc')).toBeUndefined();
    // Subjects as PrintableString allows them: Go's x509 (the API server) refuses anything else.
    for (const subject of [ca.subject, cert.subject])
      expect(subject).toMatch(/^CN=[A-Za-z0-9 '()+,\-./:=?]+$/);
    const left = notAfter(c.cert).getTime() - now.getTime();
    expect(left).toBeGreaterThan(3_500_000);
    expect(left).toBeLessThanOrEqual(3_600_000);
    // Every issue is a new CA: a rotation is not a re-signing with a leaked key.
    const again = issueWebhookCertificates({ service: 'tg-webhook', namespace: 'tg', validityMs: 3_600_000 });
    expect(new X509Certificate(again.cert).verify(ca.publicKey)).toBe(false);
  });
});

describe('an update of a pod the webhook is shown', () => {
  const labelled = (inject?: string): V1Pod => ({
    metadata: { name: 'p', labels: inject === undefined ? {} : { 'tollgate.dev/inject': inject } },
    spec: { containers: [{ name: 'app', image: 'app:1' }] },
  });

  it('refuses the sidecar label added to a running pod, saying to recreate it', () => {
    for (const before of [labelled(), labelled('false')]) {
      const plan = planUpdate(before, labelled('true'));
      expect(plan.kind).toBe('refuse');
      expect(plan.kind === 'refuse' ? plan.reason : '').toMatch(/create the pod with the label/);
    }
  });

  it('lets other updates of guarded pods, and the label taken off, pass unchanged', () => {
    expect(planUpdate(labelled('true'), labelled('true')).kind).toBe('skip');
    expect(planUpdate(labelled('true'), labelled()).kind).toBe('skip');
  });

  it('refuses another image for the sidecar of a running pod, and lets the workload’s change', () => {
    const guarded = (sidecar: string, app = 'app:1'): V1Pod => ({
      metadata: { name: 'p', labels: { 'tollgate.dev/inject': 'true' } },
      spec: {
        initContainers: [{ name: 'tollgate', image: sidecar, restartPolicy: 'Always' }],
        containers: [{ name: 'app', image: app }],
      },
    });
    const swapped = planUpdate(guarded('tollgate:1'), guarded('mallory/lookalike:1'));
    expect(swapped.kind).toBe('refuse');
    expect(swapped.kind === 'refuse' ? swapped.reason : '').toMatch(
      /image cannot be changed.*create the pod again/,
    );
    // With the label taken off in the same update: still the sidecar's image.
    expect(planUpdate(guarded('tollgate:1'), { ...guarded('x:1'), metadata: { name: 'p' } }).kind).toBe(
      'refuse',
    );
    expect(planUpdate(guarded('tollgate:1'), guarded('tollgate:1', 'app:2')).kind).toBe('skip');
  });
});
