// The test cluster's ingress controller: Traefik (built from its Go module, image from
// test/harness/images/traefik), installed as a cluster add-on the way a platform team installs
// one: its own namespace, RBAC, an IngressClass `traefik`, and a NodePort the host calls. Only the
// Kubernetes Ingress provider is on; Traefik's version check and usage report are off (pods have
// no route out of the cluster anyway).
import { stringify } from 'yaml';

export const INGRESS_CLASS = 'traefik';
export const INGRESS_NODE_PORT = 30081;
export const TRAEFIK_IMAGE = 'docker.io/tollgate/traefik:3.6.12';
const NS = 'ingress-traefik';

export function traefikManifests(): string {
  const labels = { 'app.kubernetes.io/name': 'traefik' };
  const docs: unknown[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'traefik', namespace: NS } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'traefik-ingress' },
      rules: [
        {
          apiGroups: [''],
          resources: ['services', 'secrets', 'nodes', 'endpoints'],
          verbs: ['get', 'list', 'watch'],
        },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
        {
          apiGroups: ['networking.k8s.io'],
          resources: ['ingresses', 'ingressclasses'],
          verbs: ['get', 'list', 'watch'],
        },
        { apiGroups: ['networking.k8s.io'], resources: ['ingresses/status'], verbs: ['update'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'traefik-ingress' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'traefik-ingress' },
      subjects: [{ kind: 'ServiceAccount', name: 'traefik', namespace: NS }],
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      metadata: { name: INGRESS_CLASS },
      spec: { controller: 'traefik.io/ingress-controller' },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'traefik', namespace: NS, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'traefik',
            containers: [
              {
                name: 'traefik',
                image: TRAEFIK_IMAGE,
                imagePullPolicy: 'IfNotPresent',
                args: [
                  '--entryPoints.web.address=:8000',
                  '--entryPoints.traefik.address=:9000',
                  '--ping=true',
                  '--providers.kubernetesIngress=true',
                  `--providers.kubernetesIngress.ingressClass=${INGRESS_CLASS}`,
                  '--global.checkNewVersion=false',
                  '--global.sendAnonymousUsage=false',
                  '--log.level=INFO',
                ],
                ports: [
                  { name: 'web', containerPort: 8000 },
                  { name: 'admin', containerPort: 9000 },
                ],
                readinessProbe: { httpGet: { path: '/ping', port: 9000 }, periodSeconds: 2 },
                securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true },
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'traefik', namespace: NS },
      spec: {
        type: 'NodePort',
        selector: labels,
        ports: [{ name: 'web', port: 80, targetPort: 'web', nodePort: INGRESS_NODE_PORT }],
      },
    },
  ];
  return docs.map((d) => stringify(d)).join('---\n');
}

/** `kubectl rollout status` target of the controller, for the cluster's start to wait on. */
export const TRAEFIK_DEPLOYMENT = { namespace: NS, name: 'traefik' };
