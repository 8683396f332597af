import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { loadGatewayConfig } from '../../../gateway/config.js';
import { kube } from '../../harness/index.js';
import { binDir, repoRoot } from '../../harness/paths.js';

/**
 * The chart is linted and rendered by the real `helm`, and what it renders is checked field by
 * field and then submitted to the harness's real kube-apiserver with `kubectl apply
 * --dry-run=server`, which runs the API server's own validation and admission on every object.
 */
const run = promisify(execFile);
const chart = join(repoRoot, 'helm', 'tollgate');
const helmBin = join(binDir, 'helm');
const namespace = 'tollgate-chart-test';

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  rules?: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>;
  envFrom?: Array<{ secretRef?: { name: string } }>;
  ports?: Array<{ name: string; containerPort: number }>;
  readinessProbe?: { httpGet?: { path: string } };
  livenessProbe?: { httpGet?: { path: string } };
  securityContext?: Record<string, unknown>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}
interface PodSpec {
  serviceAccountName?: string;
  securityContext?: { runAsNonRoot?: boolean };
  containers: Container[];
}
interface DeploymentSpec {
  replicas: number;
  template: { metadata: { annotations?: Record<string, string> }; spec: PodSpec };
}

async function helm(args: string[]): Promise<string> {
  const { stdout } = await run(helmBin, args, { maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

async function render(
  set: string[] = [],
  extra: string[] = [],
): Promise<{ yaml: string; objects: K8sObject[] }> {
  const yaml = await helm([
    'template',
    't1',
    chart,
    '--namespace',
    namespace,
    // helm template assumes Kubernetes 1.20 without a cluster; the chart needs 1.30+.
    '--kube-version',
    '1.34.4',
    ...extra,
    ...set.flatMap((s) => ['--set', s]),
  ]);
  const objects = parseAllDocuments(yaml)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
  return { yaml, objects };
}

const find = (objects: K8sObject[], kind: string, name: string): K8sObject => {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (o === undefined)
    throw new Error(`no ${kind} ${name} in ${objects.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return o;
};
const deployment = (objects: K8sObject[], name: string): DeploymentSpec =>
  find(objects, 'Deployment', name).spec as unknown as DeploymentSpec;
const envOf = (c: Container, name: string) => c.env?.find((e) => e.name === name);

beforeAll(() => {
  if (!existsSync(helmBin))
    throw new Error(`no helm at ${helmBin}: run \`bash test/harness/install-helm.sh\``);
});

describe('helm chart: lint and render', () => {
  it('passes helm lint', async () => {
    const out = await helm(['lint', chart, '--strict']);
    expect(out).toContain('0 chart(s) failed');
  });

  it('renders the operator, 2 gateways, a Service, a PDB, RBAC and a bundled Redis by default', async () => {
    const { objects } = await render();
    const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    expect(kinds).toEqual(
      [
        'ClusterRole/t1-tollgate-gateway',
        'ClusterRole/t1-tollgate-models-edit',
        'ClusterRole/t1-tollgate-models-view',
        'ClusterRole/t1-tollgate-operator',
        'ClusterRoleBinding/t1-tollgate-gateway',
        'ClusterRoleBinding/t1-tollgate-operator',
        'ConfigMap/t1-tollgate-gateway',
        'ConfigMap/t1-tollgate-redis-acl',
        'Secret/t1-tollgate-redis-auth',
        'Deployment/t1-tollgate-gateway',
        'Deployment/t1-tollgate-operator',
        'Deployment/t1-tollgate-redis',
        'MutatingWebhookConfiguration/t1-tollgate-webhook',
        'Role/t1-tollgate-operator-secrets',
        'RoleBinding/t1-tollgate-operator-secrets',
        'Service/t1-tollgate-webhook',
        'NetworkPolicy/t1-tollgate-gateway',
        'NetworkPolicy/t1-tollgate-models',
        'NetworkPolicy/t1-tollgate-operator',
        'NetworkPolicy/t1-tollgate-redis',
        'PodDisruptionBudget/t1-tollgate-gateway',
        'Role/t1-tollgate-operator-leader-election',
        'RoleBinding/t1-tollgate-operator-leader-election',
        'Service/t1-tollgate-gateway',
        'Service/t1-tollgate-redis',
        'ServiceAccount/t1-tollgate-gateway',
        'ServiceAccount/t1-tollgate-operator',
        // After an uninstall: the route finalizer taken off every Service (a post-delete hook).
        'ClusterRole/t1-tollgate-release-finalizers',
        'ClusterRoleBinding/t1-tollgate-release-finalizers',
        'Job/t1-tollgate-release-finalizers',
        'ServiceAccount/t1-tollgate-release-finalizers',
        // No Service takes another address's traffic through externalIPs (CVE-2020-8554).
        'ValidatingAdmissionPolicy/t1-tollgate-external-ips',
        'ValidatingAdmissionPolicyBinding/t1-tollgate-external-ips',
        // A routed Service is not turned into an ExternalName one, which frees its cluster IP.
        'ValidatingAdmissionPolicy/t1-tollgate-routed-services',
        'ValidatingAdmissionPolicyBinding/t1-tollgate-routed-services',
      ].sort(),
    );
    for (const o of objects.filter((x) => x.metadata.name === 't1-tollgate-release-finalizers'))
      expect([o.kind, o.metadata.annotations?.['helm.sh/hook']]).toEqual([o.kind, 'post-delete']);
    const hookJob = find(objects, 'Job', 't1-tollgate-release-finalizers') as unknown as {
      spec: { template: { spec: { containers: Container[] } } };
    };
    expect(hookJob.spec.template.spec.containers[0]?.args).toEqual(['release-finalizers']);
    for (const o of objects.filter(
      (x) =>
        !x.kind.startsWith('Cluster') &&
        !x.kind.startsWith('ValidatingAdmissionPolicy') &&
        x.kind !== 'MutatingWebhookConfiguration',
    ))
      expect(o.metadata.namespace).toBe(namespace);

    const gateway = deployment(objects, 't1-tollgate-gateway');
    expect(gateway.replicas).toBe(2);
    const gw = gateway.template.spec.containers[0] as Container;
    expect(gw.args).toEqual(['gateway']);
    expect(gw.image).toBe('tollgate/tollgate:0.1.0');
    expect(gw.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(gw.livenessProbe?.httpGet?.path).toBe('/healthz');
    // The gateway's own Redis user; its password comes from the auth Secret, never the spec.
    expect(envOf(gw, 'TOLLGATE_REDIS_URL')?.value).toBe(
      'redis://tollgate-gateway:$(TOLLGATE_REDIS_PASSWORD)@t1-tollgate-redis.tollgate-chart-test.svc:6379',
    );
    expect(envOf(gw, 'TOLLGATE_REDIS_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({
      name: 't1-tollgate-redis-auth',
      key: 'gateway',
    });
    expect(envOf(gw, 'TOLLGATE_CONFIG')?.value).toBe('/etc/tollgate/gateway.yaml');
    expect(gateway.template.metadata.annotations).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '9090',
      'prometheus.io/path': '/metrics',
    });
    expect(gateway.template.metadata.annotations?.['checksum/config']).toMatch(/^[0-9a-f]{64}$/);
    // V2 over gRPC on its own port, named in the pod and the Service (h2c, for a mesh or route).
    expect(gw.ports?.map((p) => [p.name, p.containerPort])).toEqual([
      ['http', 8080],
      ['grpc', 8081],
      ['metrics', 9090],
    ]);
    // Metrics apart from the traffic: the gateway's config names the port, and its policy lets
    // anyone call the traffic ports and only the release's namespace read the metrics.
    expect(find(objects, 'ConfigMap', 't1-tollgate-gateway').data?.['gateway.yaml']).toMatch(
      /^metricsPort: 9090$/m,
    );
    const gatewayPods = {
      matchLabels: {
        'app.kubernetes.io/name': 'tollgate',
        'app.kubernetes.io/instance': 't1',
        'app.kubernetes.io/component': 'gateway',
      },
    };
    const traffic = {
      ports: [
        { port: 'http', protocol: 'TCP' },
        { port: 'grpc', protocol: 'TCP' },
      ],
    };
    // The release's namespace but its Models' pods (the platform API's run there).
    const metrics = {
      from: [
        { podSelector: { matchExpressions: [{ key: 'tollgate.dev/model', operator: 'DoesNotExist' }] } },
      ],
      ports: [{ port: 'metrics', protocol: 'TCP' }],
    };
    expect(find(objects, 'NetworkPolicy', 't1-tollgate-gateway').spec).toEqual({
      podSelector: gatewayPods,
      policyTypes: ['Ingress'],
      ingress: [traffic, metrics],
    });
    // The platform API's Models, in the release's namespace: only the gateway's pods call them.
    expect(find(objects, 'NetworkPolicy', 't1-tollgate-models').spec).toEqual({
      podSelector: { matchExpressions: [{ key: 'tollgate.dev/model', operator: 'Exists' }] },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ podSelector: gatewayPods }], ...traffic }, metrics],
    });
    const service = find(objects, 'Service', 't1-tollgate-gateway') as unknown as {
      spec: { ports: Array<{ name: string; port: number; targetPort: string; appProtocol?: string }> };
    };
    expect(service.spec.ports.find((p) => p.name === 'grpc')).toEqual({
      name: 'grpc',
      port: 8081,
      targetPort: 'grpc',
      protocol: 'TCP',
      appProtocol: 'kubernetes.io/h2c',
    });
    const withoutGrpc = await render(['gateway.grpcPort=null']);
    const plain = deployment(withoutGrpc.objects, 't1-tollgate-gateway').template.spec
      .containers[0] as Container;
    expect(plain.ports?.map((p) => p.name)).toEqual(['http', 'metrics']);
    expect(
      (find(withoutGrpc.objects, 'NetworkPolicy', 't1-tollgate-gateway').spec?.ingress as unknown[])[0],
    ).toEqual({
      ports: [{ port: 'http', protocol: 'TCP' }],
    });
    const plainConfig =
      find(withoutGrpc.objects, 'ConfigMap', 't1-tollgate-gateway').data?.['gateway.yaml'] ?? '';
    expect(plainConfig).not.toContain('grpcPort');

    const operator = deployment(objects, 't1-tollgate-operator');
    expect(operator.replicas).toBe(1);
    const op = operator.template.spec.containers[0] as Container;
    // The operator's own flags and variables (cli/commands/operator.ts).
    expect(op.args).toEqual([
      'operator',
      '--metrics-port=9090',
      '--lease-name=t1-tollgate-operator',
      '--model-gateway=central',
      '--grant-key-secret=t1-tollgate-grant-key',
      '--webhook-port=9443',
      '--webhook-service=t1-tollgate-webhook',
      '--webhook-secret=t1-tollgate-webhook-tls',
      '--webhook-config=t1-tollgate-webhook',
      '--webhook-certs=self',
      '--webhook-cert-validity=90d',
      // What the webhook configuration's namespaceSelector leaves out: a review naming one is forged.
      '--webhook-exclude-namespaces=kube-system,kube-node-lease,kube-public',
      // Sidecars in other namespaces reach the bundled Redis by its full name, as the sidecar user;
      // $$( leaves the variable to the sidecar (its password, from its own namespace).
      '--sidecar-redis-url=redis://tollgate-sidecar:$$(TOLLGATE_REDIS_PASSWORD)@t1-tollgate-redis.tollgate-chart-test.svc:6379',
    ]);
    expect(envOf(op, 'TOLLGATE_REDIS_URL')?.value).toBe(
      'redis://tollgate-operator:$(TOLLGATE_REDIS_PASSWORD)@t1-tollgate-redis.tollgate-chart-test.svc:6379',
    );
    expect(envOf(op, 'TOLLGATE_REDIS_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({
      name: 't1-tollgate-redis-auth',
      key: 'operator',
    });
    expect(envOf(op, 'TOLLGATE_SIDECAR_REDIS_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({
      name: 't1-tollgate-redis-auth',
      key: 'sidecar',
    });
    // No password of the bundled Redis is written in any pod spec.
    const auth = find(objects, 'Secret', 't1-tollgate-redis-auth').data ?? {};
    expect(Object.keys(auth).sort()).toEqual(
      ['gateway', 'operator', 'replication', 'sentinel', 'sentinel-client', 'sidecar'].sort(),
    );
    for (const encoded of Object.values(auth)) {
      const password = Buffer.from(encoded, 'base64').toString();
      expect(password).toMatch(/^[A-Za-z0-9]{40}$/);
      expect(JSON.stringify(objects.filter((o) => o.kind !== 'Secret'))).not.toContain(password);
    }
    expect(envOf(op, 'TOLLGATE_IMAGE')?.value).toBe('tollgate/tollgate:0.1.0');
    expect(envOf(op, 'POD_NAMESPACE')).toEqual({
      name: 'POD_NAMESPACE',
      valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } },
    });
    expect(operator.template.metadata.annotations).toMatchObject({ 'prometheus.io/port': '9090' });

    // Every container: non-root pod, no privilege escalation, read-only root, resources set.
    const memory: Record<string, { requests: string; limits: string }> = {
      't1-tollgate-gateway': { requests: '128Mi', limits: '512Mi' },
      't1-tollgate-operator': { requests: '128Mi', limits: '1Gi' },
      't1-tollgate-redis': { requests: '64Mi', limits: '320Mi' },
    };
    for (const name of ['t1-tollgate-gateway', 't1-tollgate-operator', 't1-tollgate-redis']) {
      const pod = deployment(objects, name).template.spec;
      expect(pod.securityContext?.runAsNonRoot).toBe(true);
      for (const c of pod.containers) {
        expect(c.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
        expect(c.resources?.requests?.memory).toBe(memory[name]?.requests);
        expect(c.resources?.limits?.memory).toBe(memory[name]?.limits);
      }
    }
  });

  it('grants the operator and the gateway exactly the API access they use', async () => {
    const { objects } = await render();
    const rules = (name: string) => find(objects, 'ClusterRole', name).rules ?? [];
    const can = (name: string, group: string, resource: string, verb: string) =>
      rules(name).some(
        (r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb),
      );

    for (const [group, resource, verb] of [
      ['tollgate.dev', 'models', 'watch'],
      ['tollgate.dev', 'apikeys', 'watch'],
      ['tollgate.dev', 'models/status', 'patch'],
      ['tollgate.dev', 'apikeys/status', 'patch'],
      ['tollgate.dev', 'models/finalizers', 'update'],
      ['tollgate.dev', 'apikeys/finalizers', 'update'],
      ['apps', 'deployments', 'create'],
      ['', 'services', 'delete'],
      ['', 'pods', 'watch'],
      ['', 'events', 'create'],
      ['events.k8s.io', 'events', 'create'],
      // Taking the route finalizer off a Service (the routed-services policy asks who may).
      ['tollgate.dev', 'routes', 'release'],
    ] as const) {
      expect([group, resource, verb, can('t1-tollgate-operator', group, resource, verb)]).toEqual([
        group,
        resource,
        verb,
        true,
      ]);
    }
    // The models' pods are read (a starting replica is asked directly), never written.
    for (const verb of ['create', 'update', 'patch', 'delete'])
      expect([verb, can('t1-tollgate-operator', '', 'pods', verb)]).toEqual([verb, false]);
    const lease = find(objects, 'Role', 't1-tollgate-operator-leader-election').rules ?? [];
    expect(lease).toEqual([
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'],
      },
    ]);

    expect(can('t1-tollgate-gateway', 'tollgate.dev', 'apikeys', 'create')).toBe(true);
    expect(can('t1-tollgate-gateway', 'tollgate.dev', 'apikeys', 'delete')).toBe(true);
    // A roll marks the old key: an update, never a patch of anything else.
    expect(can('t1-tollgate-gateway', 'tollgate.dev', 'apikeys', 'update')).toBe(true);
    expect(can('t1-tollgate-gateway', 'tollgate.dev', 'apikeys/status', 'update')).toBe(false);
    expect(can('t1-tollgate-gateway', 'tollgate.dev', 'models', 'update')).toBe(true);
    // The gateway never deletes models nor touches Deployments or Secrets.
    expect(can('t1-tollgate-gateway', 'tollgate.dev', 'models', 'delete')).toBe(false);
    expect(can('t1-tollgate-gateway', 'apps', 'deployments', 'create')).toBe(false);
    expect(can('t1-tollgate-gateway', '', 'secrets', 'get')).toBe(false);
    expect(can('t1-tollgate-gateway', '', 'services', 'list')).toBe(false);
  });

  it('renders the sidecar webhook as docs/sidecar.md says: labelled pods only, never its own namespace, fail closed', async () => {
    const { objects } = await render();
    const hook = find(objects, 'MutatingWebhookConfiguration', 't1-tollgate-webhook') as unknown as {
      webhooks: Array<{
        failurePolicy: string;
        sideEffects: string;
        clientConfig: { service: { name: string; namespace: string; path: string }; caBundle?: string };
        objectSelector: unknown;
        namespaceSelector: { matchExpressions: Array<{ key: string; operator: string; values: string[] }> };
        rules: Array<{ operations: string[]; resources: string[] }>;
      }>;
    };
    const [w] = hook.webhooks;
    expect(w?.failurePolicy).toBe('Fail');
    // The only side effect, the sidecar's credential in the pod's namespace, is skipped on a dry run.
    expect(w?.sideEffects).toBe('NoneOnDryRun');
    expect(w?.clientConfig.service).toMatchObject({
      name: 't1-tollgate-webhook',
      namespace,
      path: '/mutate-v1-pod',
    });
    // The operator fills it in (and an upgrade keeps what it wrote).
    expect(w?.clientConfig.caBundle).toBeUndefined();
    expect(w?.objectSelector).toEqual({ matchLabels: { 'tollgate.dev/inject': 'true' } });
    expect(w?.namespaceSelector.matchExpressions[0]).toMatchObject({
      key: 'kubernetes.io/metadata.name',
      operator: 'NotIn',
    });
    expect(w?.namespaceSelector.matchExpressions[0]?.values).toEqual([
      namespace,
      'kube-system',
      'kube-node-lease',
      'kube-public',
    ]);
    // UPDATE too: the label added to a running pod is refused.
    expect(w?.rules).toMatchObject([{ operations: ['CREATE', 'UPDATE'], resources: ['pods'] }]);
    // The operator keeps only this configuration's caBundle, and only its own Secrets.
    const operatorRules = find(objects, 'ClusterRole', 't1-tollgate-operator').rules ?? [];
    expect(operatorRules).toContainEqual({
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['mutatingwebhookconfigurations'],
      resourceNames: ['t1-tollgate-webhook'],
      verbs: ['get', 'patch'],
    });
    expect(find(objects, 'Role', 't1-tollgate-operator-secrets').rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'update'] },
    ]);
    // The gateways sign grants with the operator's key, mounted read-only.
    const gw = deployment(objects, 't1-tollgate-gateway').template.spec.containers[0] as Container;
    expect(envOf(gw, 'TOLLGATE_GRANT_SIGNING_KEY_FILE')?.value).toBe('/var/run/tollgate/grant/key.json');
    const certManager = await render(['sidecar.webhook.certificates.source=certManager']);
    expect(certManager.objects.map((o) => o.kind)).toEqual(expect.arrayContaining(['Issuer', 'Certificate']));
    expect(
      find(certManager.objects, 'MutatingWebhookConfiguration', 't1-tollgate-webhook').metadata.annotations,
    ).toEqual({
      'cert-manager.io/inject-ca-from': `${namespace}/t1-tollgate-webhook`,
    });
    await expect(render(['sidecar.webhook.failurePolicy=Sometimes'])).rejects.toThrow(/failurePolicy/);
  });

  it('passes the budget for what calls hold only when one is set', async () => {
    const { objects } = await render(['gateway.heldBytesLimit=268435456']);
    const config = find(objects, 'ConfigMap', 't1-tollgate-gateway').data?.['gateway.yaml'] ?? '';
    expect((parseAllDocuments(config)[0]?.toJS() as Record<string, unknown>)['heldBytesLimit']).toBe(
      268435456,
    );
  });

  it('writes the gateway config file from OIDC, upstream and role values', async () => {
    const { objects } = await render([
      'oidc.issuer=https://idp.example.test/realms/data',
      'oidc.jwksUrl=https://idp.example.test/realms/data/certs',
      'oidc.clientId=tollgate-panel',
      'oidc.adminGroups={platform-admins,security}',
      'platform.upstreams.datasets=http://datasets.platform.svc:8080',
    ]);
    const config = find(objects, 'ConfigMap', 't1-tollgate-gateway').data?.['gateway.yaml'] ?? '';
    const parsed = parseAllDocuments(config)[0]?.toJS() as Record<string, unknown>;
    expect(parsed).toEqual({
      port: 8080,
      metricsPort: 9090,
      upstreams: { datasets: 'http://datasets.platform.svc:8080' },
      roles: [],
      creditCosts: {},
      grpcPort: 8081,
      bodyLimitBytes: 10485760,
      upstreamTimeoutMs: 60000,
      shutdownTimeoutMs: 30000,
      shutdownDrainMs: 3000,
      trustedProxies: 0,
      trustedProxyCidrs: [],
      maxRollGraceSeconds: 604800,
      maxKeysPerOwner: 20000,
      managementCallsPerSecond: 50,
      auditRetentionDays: 90,
      webhookAllowedHosts: [],
      webhookAllowedCidrs: [],
      webhookAllowHttp: false,
      usageExport: true,
      usageExportRetentionDays: 7,
      usageExportSource: '/tollgate',
      oidc: {
        issuer: 'https://idp.example.test/realms/data',
        audience: 'tollgate',
        jwksUrl: 'https://idp.example.test/realms/data/certs',
        clientId: 'tollgate-panel',
        scopes: 'openid profile email groups',
        clockToleranceSeconds: 30,
      },
      groupsClaim: 'groups',
      adminGroups: ['platform-admins', 'security'],
    });
    // The gateway's own loader accepts the file as the chart mounts it.
    const dir = await mkdtemp(join(tmpdir(), 'tollgate-chart-'));
    try {
      await writeFile(join(dir, 'gateway.yaml'), config);
      const loaded = loadGatewayConfig({
        env: { TOLLGATE_REDIS_URL: 'redis://t1-tollgate-redis:6379' },
        file: join(dir, 'gateway.yaml'),
      });
      expect(loaded.upstreams).toEqual({ datasets: 'http://datasets.platform.svc:8080' });
      expect(loaded.oidc?.jwksUrl).toBe('https://idp.example.test/realms/data/certs');
      expect(loaded.oidc?.clientId).toBe('tollgate-panel');
      expect(loaded.adminGroups).toEqual(['platform-admins', 'security']);
      expect(loaded.redisUrl).toBe('redis://t1-tollgate-redis:6379');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('points the gateways at the audit storage, with its credentials from a Secret', async () => {
    const { objects } = await render([
      'audit.storageUri=s3://audit-trail/tollgate',
      'audit.credentialsSecret=audit-s3',
      'audit.retentionDays=30',
      'gateway.trustedProxies=1',
      'gateway.trustedProxyCidrs={10.244.0.0/16}',
      'keys.maxRollGraceSeconds=3600',
    ]);
    const config = find(objects, 'ConfigMap', 't1-tollgate-gateway').data?.['gateway.yaml'] ?? '';
    expect(parseAllDocuments(config)[0]?.toJS()).toMatchObject({
      auditUri: 's3://audit-trail/tollgate',
      auditRetentionDays: 30,
      trustedProxies: 1,
      trustedProxyCidrs: ['10.244.0.0/16'],
      maxRollGraceSeconds: 3600,
    });
    const gw = deployment(objects, 't1-tollgate-gateway').template.spec.containers[0] as Container;
    expect(gw.envFrom).toEqual([{ secretRef: { name: 'audit-s3' } }]);
    // Without storage the config names none (events reach the log only), and no Secret is read.
    const plain = await render([]);
    const plainConfig = find(plain.objects, 'ConfigMap', 't1-tollgate-gateway').data?.['gateway.yaml'] ?? '';
    expect(parseAllDocuments(plainConfig)[0]?.toJS()).not.toHaveProperty('auditUri');
    const plainGw = deployment(plain.objects, 't1-tollgate-gateway').template.spec.containers[0] as Container;
    expect(plainGw.envFrom).toBeUndefined();
    await expect(render(['audit.storageUri=ftp://nowhere'])).rejects.toThrow(/storageUri/);
  });

  it('tells the gateways where models log their calls, only where the administrator says', async () => {
    const { objects } = await render([
      'models.payloadLogs.storageUri=s3://lake/payloads',
      'models.payloadLogs.intervalSeconds=30',
    ]);
    const config = find(objects, 'ConfigMap', 't1-tollgate-gateway').data?.['gateway.yaml'] ?? '';
    expect(parseAllDocuments(config)[0]?.toJS()).toMatchObject({
      payloadLogUri: 's3://lake/payloads',
      payloadLogIntervalMs: 30_000,
    });
    const plain = await render([]);
    const plainConfig = find(plain.objects, 'ConfigMap', 't1-tollgate-gateway').data?.['gateway.yaml'] ?? '';
    expect(parseAllDocuments(plainConfig)[0]?.toJS()).not.toHaveProperty('payloadLogUri');
    await expect(render(['models.payloadLogs.storageUri=/var/log/payloads'])).rejects.toThrow(/storageUri/);
  });

  it('uses an external Redis from a URL (kept in a Secret) and renders no bundled Redis', async () => {
    const { objects } = await render(['redis.external.url=redis://:s3cret@redis.shared.svc:6379/2']);
    expect(objects.some((o) => o.kind === 'Deployment' && o.metadata.name === 't1-tollgate-redis')).toBe(
      false,
    );
    expect(find(objects, 'Secret', 't1-tollgate-redis-url').stringData).toEqual({
      url: 'redis://:s3cret@redis.shared.svc:6379/2',
    });
    for (const [name, variable] of [
      ['t1-tollgate-gateway', 'TOLLGATE_REDIS_URL'],
      ['t1-tollgate-operator', 'TOLLGATE_REDIS_URL'],
    ] as const) {
      const c = deployment(objects, name).template.spec.containers[0] as Container;
      expect(envOf(c, variable)?.valueFrom?.secretKeyRef).toEqual({
        name: 't1-tollgate-redis-url',
        key: 'url',
      });
      // The password never appears in a Deployment.
      expect(JSON.stringify(c)).not.toContain('s3cret');
    }
  });

  it('runs the bundled Redis as a primary, replicas and Sentinels, every client pointed at the Sentinels', async () => {
    const { objects } = await render(['redis.sentinel.enabled=true']);
    expect(objects.some((o) => o.kind === 'Deployment' && o.metadata.name === 't1-tollgate-redis')).toBe(
      false,
    );
    const set = find(objects, 'StatefulSet', 't1-tollgate-redis').spec as {
      replicas: number;
      serviceName: string;
      template: { spec: PodSpec };
    };
    expect(set.replicas).toBe(3);
    expect(set.serviceName).toBe('t1-tollgate-redis-headless');
    expect(set.template.spec.containers.map((c) => c.name)).toEqual(['redis', 'sentinel']);
    // A drain takes one member at a time.
    expect(find(objects, 'PodDisruptionBudget', 't1-tollgate-redis').spec).toMatchObject({
      maxUnavailable: 1,
    });
    // The members find each other by name before they are ready.
    expect(find(objects, 'Service', 't1-tollgate-redis-headless').spec).toMatchObject({
      clusterIP: 'None',
      publishNotReadyAddresses: true,
    });
    const scripts = find(objects, 'ConfigMap', 't1-tollgate-redis-scripts').data ?? {};
    expect(scripts['sentinel.sh']).toContain('sentinel monitor tollgate $primary 6379 2');
    expect(scripts['sentinel.sh']).toContain('sentinel down-after-milliseconds tollgate 1500');
    const sentinels = [0, 1, 2]
      .map(
        (i) =>
          `t1-tollgate-redis-${i}.t1-tollgate-redis-headless.tollgate-chart-test.svc.cluster.local:26379`,
      )
      .join(',');
    // Each as its own user; the Sentinels asked as the client user, which can only find the primary.
    const url = (user: string, $ = '$') =>
      `redis+sentinel://tollgate-${user}:${$}(TOLLGATE_REDIS_PASSWORD)@${sentinels}/tollgate` +
      `?sentinelUsername=tollgate-client&sentinelPassword=${$}(TOLLGATE_REDIS_SENTINEL_PASSWORD)`;
    const gw = deployment(objects, 't1-tollgate-gateway').template.spec.containers[0] as Container;
    const op = deployment(objects, 't1-tollgate-operator').template.spec.containers[0] as Container;
    expect(envOf(gw, 'TOLLGATE_REDIS_URL')?.value).toBe(url('gateway'));
    expect(envOf(op, 'TOLLGATE_REDIS_URL')?.value).toBe(url('operator'));
    expect(op.args).toContain(`--sidecar-redis-url=${url('sidecar', '$$')}`);
    expect(envOf(op, 'TOLLGATE_SIDECAR_REDIS_SENTINEL_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({
      name: 't1-tollgate-redis-auth',
      key: 'sentinel-client',
    });
    // Nobody reaches a node or a Sentinel without a password; replicas and Sentinels log in too.
    expect(scripts['redis.sh']).toContain('echo "user default off"');
    expect(scripts['redis.sh']).toContain('--masteruser tollgate-replication');
    expect(scripts['sentinel.sh']).toContain('user default off');
    expect(scripts['sentinel.sh']).toContain('sentinel auth-user tollgate tollgate-sentinel');
    // Its NetworkPolicy lets the members talk among themselves, and the sidecars in.
    const policy = JSON.stringify(find(objects, 'NetworkPolicy', 't1-tollgate-redis').spec);
    expect(policy).toContain('"values":["gateway","operator","redis"]');
    expect(policy).toContain('"tollgate.dev/inject":"true"');
    await expect(render(['redis.sentinel.enabled=true', 'redis.sentinel.replicas=2'])).rejects.toThrow(
      /sentinel\/replicas/,
    );
  });

  it('passes the operator its namespace and leader-election choices as flags', async () => {
    const { objects } = await render([
      'operator.leaderElection=false',
      'operator.watchNamespace=data',
      'rbac.aggregateModelRoles=false',
      'sidecar.webhook.enabled=false',
    ]);
    const op = deployment(objects, 't1-tollgate-operator').template.spec.containers[0] as Container;
    expect(op.args).toEqual([
      'operator',
      '--metrics-port=9090',
      '--lease-name=t1-tollgate-operator',
      '--no-leader-elect',
      '--namespace=data',
      '--model-gateway=central',
      '--grant-key-secret=t1-tollgate-grant-key',
    ]);
  });

  it('renders PodMonitors and the Grafana dashboard when told to, and neither by default', async () => {
    const plain = await render();
    expect(plain.objects.filter((o) => o.kind === 'PodMonitor')).toEqual([]);
    const { objects } = await render([
      'metrics.podMonitors.enabled=true',
      'metrics.podMonitors.labels.release=kube-prometheus-stack',
      'metrics.grafanaDashboard.enabled=true',
    ]);
    const monitors = objects.filter((o) => o.kind === 'PodMonitor').map((o) => o.metadata.name);
    expect(monitors.sort()).toEqual(['t1-tollgate-gateway', 't1-tollgate-models', 't1-tollgate-operator']);
    expect(
      ['gateway', 'operator'].map(
        (c) =>
          (
            find(objects, 'PodMonitor', `t1-tollgate-${c}`).spec as {
              podMetricsEndpoints: Array<{ port: string }>;
            }
          ).podMetricsEndpoints[0]?.port,
      ),
    ).toEqual(['metrics', 'http']);
    const models = find(objects, 'PodMonitor', 't1-tollgate-models');
    expect(models.spec).toMatchObject({
      namespaceSelector: { any: true },
      selector: { matchExpressions: [{ key: 'tollgate.dev/model', operator: 'Exists' }] },
      // Any team can label a pod as a model's: what it answers a scrape is bounded.
      sampleLimit: 5000,
      labelLimit: 30,
      labelNameLengthLimit: 128,
      labelValueLengthLimit: 512,
    });
    const bounded = await render([
      'metrics.podMonitors.enabled=true',
      'metrics.podMonitors.models.sampleLimit=800',
    ]);
    expect(find(bounded.objects, 'PodMonitor', 't1-tollgate-models').spec).toMatchObject({
      sampleLimit: 800,
    });
    await expect(
      render(['metrics.podMonitors.enabled=true', 'metrics.podMonitors.models.sampleLimit=0']),
    ).rejects.toThrow(/sampleLimit/);
    const dashboard = find(objects, 'ConfigMap', 't1-tollgate-dashboard');
    const json = JSON.parse(dashboard.data?.['tollgate.json'] ?? '{}') as {
      uid?: string;
      panels?: unknown[];
    };
    // The file in the chart, whole: the same JSON the dashboard test checks against Prometheus.
    expect(json.uid).toBe('tollgate-models-keys');
    expect(json.panels?.length).toBeGreaterThan(10);
    await expect(render(['metrics.podMonitors.interval=often'])).rejects.toThrow(/podMonitors\/interval/);
  });

  it('refuses values that cannot work, with a message saying what to set', async () => {
    await expect(render(['oidc.clientId=tollgate-panel'])).rejects.toThrow(
      /oidc\.clientId needs oidc\.issuer/,
    );
    for (const port of ['gateway.port=9090', 'gateway.grpcPort=9090'])
      await expect(render([port])).rejects.toThrow(/gateway\.metricsPort must differ from gateway\.port/);
    await expect(
      render(['oidc.issuer=https://idp.example.test', 'oidc.scopes=profile email']),
    ).rejects.toThrow(/oidc\/scopes/);
    // values.schema.json: wrong types, misspelt keys and unusable URLs stop the install.
    await expect(render(['gateway.replicas=two'])).rejects.toThrow(
      /gateway\/replicas': got string, want integer/,
    );
    await expect(render(['gatway.replicas=3'])).rejects.toThrow(/additional properties 'gatway' not allowed/);
    await expect(render(['redis.external.url=http://redis:6379'])).rejects.toThrow(/redis\/external\/url/);
    await expect(render(['platform.upstreams.models=http://elsewhere'])).rejects.toThrow(
      /propertyName 'models'/,
    );
    await expect(render(['operator.replicas=2', 'operator.leaderElection=false'])).rejects.toThrow(
      /operator\.leaderElection: true/,
    );
    await expect(render(['operator.watchNamespace=data'])).rejects.toThrow(
      /operator\.watchNamespace watches one namespace.*set rbac\.aggregateModelRoles: false/,
    );
    await expect(render(['models.gateway=sidecar', 'sidecar.webhook.enabled=false'])).rejects.toThrow(
      /models\.gateway: sidecar needs sidecar\.webhook\.enabled: true/,
    );
    await expect(render(['gateway.heldBytesLimit=1048576'])).rejects.toThrow(
      /gateway\.heldBytesLimit must hold at least one body of gateway\.bodyLimitBytes/,
    );
  });

  it('passes prices per call and per row to the gateway, and stops a price that is neither', async () => {
    const prices = { reports: 3, 'model-churn': { credits: 2, per: 'row' } };
    const { objects } = await render([], ['--set-json', `platform.creditCosts=${JSON.stringify(prices)}`]);
    const config = find(objects, 'ConfigMap', 't1-tollgate-gateway').data?.['gateway.yaml'] ?? '';
    const parsed = parseAllDocuments(config)[0]?.toJS() as Record<string, unknown>;
    expect(parsed.creditCosts).toEqual(prices);
    // As the gateway reads it.
    expect(
      loadGatewayConfig({
        env: {},
        overrides: { creditCosts: parsed.creditCosts as Record<string, unknown> },
      }).creditCosts,
    ).toEqual({
      reports: { credits: 3, per: 'call' },
      'model-churn': { credits: 2, per: 'row' },
    });
    await expect(
      render([], ['--set-json', 'platform.creditCosts={"model-churn":{"credits":2,"per":"batch"}}']),
    ).rejects.toThrow(/platform\/creditCosts\/model-churn/);
  });

  it('renders Gateway API routes to the Gateway named, REST and V2 over gRPC, only when asked', async () => {
    expect((await render()).objects.filter((o) => o.kind === 'HTTPRoute' || o.kind === 'GRPCRoute')).toEqual(
      [],
    );
    const parentRefs = [{ name: 'edge', namespace: 'gateway-system', sectionName: 'https' }];
    const { objects } = await render(
      ['gateway.gatewayAPI.enabled=true', 'gateway.gatewayAPI.hostnames[0]=api.example.test'],
      ['--set-json', `gateway.gatewayAPI.parentRefs=${JSON.stringify(parentRefs)}`],
    );
    const http = find(objects, 'HTTPRoute', 't1-tollgate-gateway') as K8sObject & {
      spec: Record<string, unknown>;
    };
    expect(http.spec).toEqual({
      parentRefs,
      hostnames: ['api.example.test'],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/' } }],
          backendRefs: [{ name: 't1-tollgate-gateway', port: 80 }],
        },
      ],
    });
    const grpc = find(objects, 'GRPCRoute', 't1-tollgate-gateway') as K8sObject & {
      spec: Record<string, unknown>;
    };
    expect(grpc.spec).toEqual({
      parentRefs,
      hostnames: ['api.example.test'],
      rules: [
        {
          matches: [{ method: { type: 'Exact', service: 'inference.GRPCInferenceService' } }],
          backendRefs: [{ name: 't1-tollgate-gateway', port: 8081 }],
        },
      ],
    });
    // Without gRPC, no GRPCRoute; without a Gateway to attach to, a clear refusal.
    const restOnly = await render(
      ['gateway.gatewayAPI.enabled=true', 'gateway.grpcPort=null'],
      ['--set-json', `gateway.gatewayAPI.parentRefs=${JSON.stringify(parentRefs)}`],
    );
    expect(restOnly.objects.filter((o) => o.kind === 'GRPCRoute')).toEqual([]);
    await expect(render(['gateway.gatewayAPI.enabled=true'])).rejects.toThrow(
      /gateway\.gatewayAPI\.enabled needs gateway\.gatewayAPI\.parentRefs/,
    );
  });

  it('serves ext_authz only when asked, on its own port, reachable only from the proxies named', async () => {
    const plain = await render();
    expect(plain.yaml).not.toContain('ext-authz');
    const { objects } = await render([
      'gateway.extAuthzPort=9191',
      'gateway.extAuthzFrom[0].namespaceSelector.matchLabels.team=edge',
    ]);
    const config = find(objects, 'ConfigMap', 't1-tollgate-gateway').data?.['gateway.yaml'] ?? '';
    expect((parseAllDocuments(config)[0]?.toJS() as Record<string, unknown>)['extAuthzPort']).toBe(9191);
    const container = deployment(objects, 't1-tollgate-gateway').template.spec.containers[0];
    expect(container?.ports).toContainEqual({ name: 'ext-authz', containerPort: 9191, protocol: 'TCP' });
    const service = find(objects, 'Service', 't1-tollgate-gateway') as K8sObject & {
      spec: { ports: Array<Record<string, unknown>> };
    };
    expect(service.spec.ports).toContainEqual({
      name: 'ext-authz',
      port: 9191,
      targetPort: 'ext-authz',
      protocol: 'TCP',
      appProtocol: 'kubernetes.io/h2c',
    });
    const policy = find(objects, 'NetworkPolicy', 't1-tollgate-gateway') as K8sObject & {
      spec: { ingress: Array<{ from?: unknown[]; ports: Array<{ port: string }> }> };
    };
    const reaching = policy.spec.ingress.filter((rule) => rule.ports.some((p) => p.port === 'ext-authz'));
    expect(reaching).toEqual([
      {
        from: [{ namespaceSelector: { matchLabels: { team: 'edge' } } }],
        ports: [{ port: 'ext-authz', protocol: 'TCP' }],
      },
    ]);
    await expect(render(['gateway.extAuthzPort=8080'])).rejects.toThrow(
      /gateway\.extAuthzPort must differ from gateway\.port/,
    );
  });

  it('sends traces only when tracing.endpoint is set, with OpenTelemetry’s own variables on the gateway and the operator (which tells its sidecars)', async () => {
    const otel = (objects: K8sObject[], name: string) =>
      (deployment(objects, name).template.spec.containers[0]?.env ?? []).filter((e) =>
        String(e.name).startsWith('OTEL_'),
      );
    const plain = await render();
    expect(otel(plain.objects, 't1-tollgate-gateway')).toEqual([]);
    expect(otel(plain.objects, 't1-tollgate-operator')).toEqual([]);
    const { objects } = await render([
      'tracing.endpoint=http://otel-collector.observability:4318',
      'tracing.sampleRatio=0.05',
    ]);
    for (const name of ['t1-tollgate-gateway', 't1-tollgate-operator']) {
      expect(otel(objects, name)).toEqual([
        { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://otel-collector.observability:4318' },
        { name: 'OTEL_EXPORTER_OTLP_PROTOCOL', value: 'http/protobuf' },
        { name: 'OTEL_TRACES_SAMPLER', value: 'parentbased_traceidratio' },
        { name: 'OTEL_TRACES_SAMPLER_ARG', value: '0.05' },
      ]);
    }
    await expect(render(['tracing.endpoint=collector:4318'])).rejects.toThrow(
      /tracing\.endpoint|tracing\/endpoint|pattern/,
    );
    await expect(render(['tracing.sampleRatio=2'])).rejects.toThrow(/sampleRatio|maximum/);
  });

  it('renders the CRDs from the repository crds/ folder (one source)', async () => {
    const { objects } = await render([], ['--include-crds']);
    const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata.name);
    expect(crds).toContain('apikeys.tollgate.dev');
    expect(crds).toContain('models.tollgate.dev');
  });
});

describe('helm chart: accepted by a real kube-apiserver', () => {
  const kubectl = async (args: string[], input?: string) => {
    const k = await kube();
    return new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
      const child = execFile(
        k.kubectl,
        ['--kubeconfig', k.kubeconfig, ...args],
        { maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve({ stdout, stderr }),
      );
      if (input !== undefined) child.stdin?.end(input);
    });
  };

  beforeAll(async () => {
    await kubectl(['create', 'namespace', namespace]).catch((e: Error) => {
      if (!/AlreadyExists/.test(e.message)) throw e;
    });
    // RBAC answers about custom resources only once their CRDs are served.
    await kubectl(['apply', '-f', join(repoRoot, 'crds')]);
    await kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=30s',
      'crd/models.tollgate.dev',
      'crd/apikeys.tollgate.dev',
    ]);
  });

  it('applies every rendered object with kubectl apply --dry-run=server', async () => {
    for (const set of [
      [],
      [
        'redis.external.url=redis://redis.shared.svc:6379',
        'gateway.ingress.enabled=true',
        'gateway.ingress.host=tollgate.example.test',
        'operator.replicas=2',
      ],
      ['redis.sentinel.enabled=true'],
    ]) {
      const { yaml, objects } = await render(set, ['--include-crds']);
      const { stdout } = await kubectl(['apply', '--dry-run=server', '-o', 'name', '-f', '-'], yaml);
      const applied = stdout.trim().split('\n').sort();
      expect(applied).toHaveLength(objects.length);
    }
  });

  it('refuses, at the API server, a Service that sets or changes externalIPs outside the allowed namespaces', async () => {
    const { objects } = await render(['externalIPs.allowedNamespaces={ops-allowed}']);
    const policy = objects.filter(
      (o) => o.kind.startsWith('ValidatingAdmissionPolicy') && o.metadata.name === 't1-tollgate-external-ips',
    );
    expect(policy).toHaveLength(2);
    const yaml = policy.map((o) => JSON.stringify(o)).join('\n');
    await kubectl(['apply', '-f', '-'], yaml);
    await kubectl(['create', 'namespace', 'ops-allowed']).catch((e: Error) => {
      if (!/AlreadyExists/.test(e.message)) throw e;
    });
    const service = (ns: string, name: string, externalIPs?: string[]) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace: ns },
        spec: { ports: [{ port: 80 }], selector: { app: name }, ...(externalIPs ? { externalIPs } : {}) },
      });
    const outcome = (ns: string, name: string, externalIPs?: string[]) =>
      kubectl(['apply', '-f', '-'], service(ns, name, externalIPs)).then(
        () => 'admitted',
        (e: Error) => e.message,
      );
    try {
      // The API server loads a policy a moment after it is written.
      const deadline = Date.now() + 20_000;
      let first = await outcome(namespace, 'thief', ['10.96.0.10']);
      while (first === 'admitted' && Date.now() < deadline) {
        await kubectl(['delete', 'service', '-n', namespace, 'thief']);
        await new Promise((r) => setTimeout(r, 500));
        first = await outcome(namespace, 'thief', ['10.96.0.10']);
      }
      expect(first).toMatch(/spec\.externalIPs would send that address's traffic/);
      // A Service without them, and then one given them by an update: admitted, refused.
      expect(await outcome(namespace, 'plain')).toBe('admitted');
      expect(await outcome(namespace, 'plain', ['10.96.0.10'])).toMatch(/ValidatingAdmissionPolicy/);
      // The namespace an administrator allowed keeps the feature.
      expect(await outcome('ops-allowed', 'edge', ['192.0.2.10'])).toBe('admitted');
    } finally {
      await kubectl(['delete', '--ignore-not-found', 'service', '-n', namespace, 'plain', 'thief']);
      await kubectl(['delete', '--ignore-not-found', 'namespace', 'ops-allowed', '--wait=false']);
      await kubectl(['delete', '--ignore-not-found', '-f', '-'], yaml);
    }
  });

  it('refuses, at the API server, turning a Service the route finalizer holds into an ExternalName one, or taking the finalizer off but by the operator', async () => {
    const { objects } = await render();
    const policy = objects.filter(
      (o) =>
        o.kind.startsWith('ValidatingAdmissionPolicy') && o.metadata.name === 't1-tollgate-routed-services',
    );
    expect(policy).toHaveLength(2);
    const yaml = policy.map((o) => JSON.stringify(o)).join('\n');
    await kubectl(['apply', '-f', '-'], yaml);
    const make = (name: string, finalizer: string) =>
      kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name, namespace, finalizers: [finalizer] },
          spec: { ports: [{ port: 80 }], selector: { app: name } },
        }),
      );
    const patch = (name: string, body: object, as: string[] = []) =>
      kubectl([
        ...['patch', 'service', name, '-n', namespace, '--type=merge', '-p', JSON.stringify(body), ...as],
      ]).then(
        () => 'admitted',
        (e: Error) => e.message,
      );
    const toExternalName = (name: string) =>
      patch(name, { spec: { type: 'ExternalName', externalName: 'elsewhere.example.test' } });
    // Each account may patch Services here (RBAC): the tenant in its namespace, the operator and
    // the uninstall hook by the chart's own roles, an administrator of the cluster by cluster-admin
    // (not system:masters, which managed clusters do not hand out). Whether it may take the
    // finalizer off is the policy's.
    const account = (sa: string) => ['--as', `system:serviceaccount:${namespace}:${sa}`];
    const chartRoles = objects.filter(
      (o) =>
        ['ClusterRole', 'ClusterRoleBinding'].includes(o.kind) &&
        ['t1-tollgate-operator', 't1-tollgate-release-finalizers'].includes(o.metadata.name),
    );
    expect(chartRoles).toHaveLength(4);
    const rbac = [
      ...chartRoles,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'patch-services', namespace },
        rules: [{ apiGroups: [''], resources: ['services'], verbs: ['get', 'patch', 'update'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'patch-services', namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'patch-services' },
        subjects: [{ kind: 'ServiceAccount', name: 'tenant', namespace }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'tollgate-test-platform-admin' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'platform-admin' }],
      },
    ]
      .map((o) => JSON.stringify(o))
      .join('\n');
    await kubectl(['apply', '-f', '-'], rbac);
    try {
      await make('routed', 'tollgate.dev/route');
      await make('other', 'example.com/keep');
      await make('by-hook', 'tollgate.dev/route');
      // The API server loads a policy a moment after it is written.
      const deadline = Date.now() + 20_000;
      let refused = await toExternalName('routed');
      while (refused === 'admitted' && Date.now() < deadline) {
        await patch('routed', { spec: { type: 'ClusterIP', externalName: null } });
        await new Promise((r) => setTimeout(r, 500));
        refused = await toExternalName('routed');
      }
      expect(refused).toMatch(/an ExternalName Service would free that IP while calls are still sent to it/);
      const { stdout: ip } = await kubectl([
        ...['get', 'service', 'routed', '-n', namespace],
        ...['-o', 'jsonpath={.spec.clusterIP}'],
      ]);
      expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      // The team may not take the finalizer off itself (a deletion would then free the IP at once),
      // though it may edit the list around it.
      expect(await patch('routed', { metadata: { finalizers: null } }, account('tenant'))).toMatch(
        /only Tollgate's operator takes it off, once the route is gone/,
      );
      const kept = { metadata: { finalizers: ['tollgate.dev/route', 'example.com/mine'] } };
      expect(await patch('routed', kept, account('tenant'))).toBe('admitted');
      // The operator does, once the route is gone; so does the uninstall hook, and an administrator.
      expect(await patch('routed', { metadata: { finalizers: null } }, account('t1-tollgate-operator'))).toBe(
        'admitted',
      );
      expect(
        await patch('by-hook', { metadata: { finalizers: null } }, account('t1-tollgate-release-finalizers')),
      ).toBe('admitted');
      await make('by-admin', 'tollgate.dev/route');
      const admin = ['--as', 'platform-admin'];
      expect(await patch('by-admin', { metadata: { finalizers: null } }, admin)).toBe('admitted');
      await make('by-admin', 'tollgate.dev/route');
      expect(await patch('by-admin', { metadata: { finalizers: null } })).toBe('admitted');
      // Once the finalizer is gone (the route let go), the change is the team's to make.
      expect(await toExternalName('routed')).toBe('admitted');
      // Another controller's finalizer holds nothing of Tollgate's.
      expect(await toExternalName('other')).toBe('admitted');
    } finally {
      for (const name of ['routed', 'other', 'by-hook', 'by-admin']) {
        await patch(name, { metadata: { finalizers: null } });
        await kubectl(['delete', '--ignore-not-found', 'service', '-n', namespace, name]);
      }
      await kubectl(['delete', '--ignore-not-found', '-f', '-'], yaml);
      await kubectl(['delete', '--ignore-not-found', '-f', '-'], rbac);
    }
  });

  it("gives each ServiceAccount, as the API server's RBAC decides, what its process calls", async () => {
    const { objects } = await render();
    const rbac = objects.filter((o) =>
      ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind),
    );
    const yaml = rbac.map((o) => JSON.stringify(o)).join('\n');
    await kubectl(['apply', '-f', '-'], yaml);
    try {
      const k = await kube();
      // `kubectl auth can-i` prints yes or no; it exits 1 on "no".
      const can = (sa: string, verb: string, resource: string, ns: string = 'models-team') =>
        new Promise<string>((resolve) => {
          const as = `system:serviceaccount:${namespace}:t1-tollgate-${sa}`;
          // kubectl reads TYPE/NAME, so a subresource goes in its own flag.
          const [type = resource, subresource] = resource.split('/');
          execFile(
            k.kubectl,
            [
              ...['--kubeconfig', k.kubeconfig, 'auth', 'can-i', verb, type, '--as', as, '-n', ns],
              ...(subresource === undefined ? [] : ['--subresource', subresource]),
            ],
            (_error, stdout, stderr) => resolve(stdout.trim() || stderr.trim()),
          );
        });
      const cases: Array<[string, string, string, string, string?]> = [
        ['operator', 'watch', 'models.tollgate.dev', 'yes'],
        ['operator', 'patch', 'models.tollgate.dev/status', 'yes'],
        ['operator', 'update', 'apikeys.tollgate.dev/finalizers', 'yes'],
        ['operator', 'create', 'deployments.apps', 'yes'],
        ['operator', 'delete', 'services', 'yes'],
        ['operator', 'create', 'events', 'yes'],
        ['operator', 'get', 'secrets', 'yes'],
        ['operator', 'list', 'secrets', 'no'],
        // The sidecar's Redis credential, made in a guarded pod's namespace; no other Secret changed.
        ['operator', 'create', 'secrets', 'yes'],
        ['operator', 'update', 'secrets', 'no'],
        ['operator', 'delete', 'secrets', 'no'],
        ['operator', 'update', 'leases.coordination.k8s.io', 'yes', namespace],
        ['operator', 'update', 'leases.coordination.k8s.io', 'no'],
        ['operator', 'create', 'apikeys.tollgate.dev', 'no'],
        ['gateway', 'create', 'apikeys.tollgate.dev', 'yes'],
        ['gateway', 'delete', 'apikeys.tollgate.dev', 'yes'],
        ['gateway', 'update', 'apikeys.tollgate.dev', 'yes'],
        ['gateway', 'update', 'models.tollgate.dev', 'yes'],
        ['gateway', 'list', 'models.tollgate.dev', 'yes'],
        ['gateway', 'delete', 'models.tollgate.dev', 'no'],
        ['gateway', 'patch', 'models.tollgate.dev/status', 'no'],
        ['gateway', 'get', 'secrets', 'no'],
        ['gateway', 'create', 'deployments.apps', 'no'],
        // The uninstall hook: the finalizers of Services, Models and ApiKeys, nothing else.
        ['release-finalizers', 'patch', 'services', 'yes'],
        ['release-finalizers', 'delete', 'services', 'no'],
        ['release-finalizers', 'get', 'secrets', 'no'],
        ['release-finalizers', 'patch', 'deployments.apps', 'no'],
        ['release-finalizers', 'patch', 'models.tollgate.dev', 'yes'],
        ['release-finalizers', 'patch', 'apikeys.tollgate.dev', 'yes'],
        ['release-finalizers', 'delete', 'models.tollgate.dev', 'no'],
        ['release-finalizers', 'create', 'apikeys.tollgate.dev', 'no'],
      ];
      for (const [sa, verb, resource, expected, ns] of cases) {
        expect([sa, verb, resource, ns ?? '', await can(sa, verb, resource, ns)]).toEqual([
          sa,
          verb,
          resource,
          ns ?? '',
          expected,
        ]);
      }
    } finally {
      await kubectl(['delete', '--ignore-not-found', '-f', '-'], yaml);
    }
  });
});
