// The test cluster's ingress controller and Gateway API implementation: Traefik (built from its
// Go module, image from test/harness/images/traefik), installed as a cluster add-on the way a
// platform team installs one: its own namespace, RBAC, an IngressClass `traefik`, a GatewayClass
// `traefik` with one Gateway (`edge`) that routes of any namespace may attach to, and a NodePort
// for each the host calls. Its Kubernetes Ingress and Gateway providers are on; Traefik's version
// check and usage report are off (pods have no route out of the cluster anyway).
import { join } from 'node:path';
import { stringify } from 'yaml';
import { cacheDir } from '../paths.js';

export const INGRESS_CLASS = 'traefik';
export const INGRESS_NODE_PORT = 30081;
export const TRAEFIK_IMAGE = 'docker.io/tollgate/traefik:3.6.12';
const NS = 'ingress-traefik';
/** The Gateway API's CRDs (standard channel) at Traefik's version, as install.sh wrote them. */
export const GATEWAY_API_VERSION = 'v1.4.0';
export const GATEWAY_API_CRDS = join(cacheDir, `gateway-api-${GATEWAY_API_VERSION}.yaml`);
/** The platform team's Gateway: its listener `web` takes HTTP (and gRPC, h2c) routes of any namespace. */
export const EDGE_GATEWAY = { name: 'edge', namespace: NS, sectionName: 'web' };
export const GATEWAY_NODE_PORT = 30082;
const GATEWAY_PORT = 8100;

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
        // The Gateway provider's, as Traefik documents them.
        { apiGroups: [''], resources: ['namespaces', 'configmaps'], verbs: ['get', 'list', 'watch'] },
        {
          apiGroups: ['gateway.networking.k8s.io'],
          resources: [
            'backendtlspolicies',
            'gatewayclasses',
            'gateways',
            'grpcroutes',
            'httproutes',
            'referencegrants',
            'tcproutes',
            'tlsroutes',
          ],
          verbs: ['get', 'list', 'watch'],
        },
        {
          apiGroups: ['gateway.networking.k8s.io'],
          resources: [
            'backendtlspolicies/status',
            'gatewayclasses/status',
            'gateways/status',
            'grpcroutes/status',
            'httproutes/status',
            'tcproutes/status',
            'tlsroutes/status',
          ],
          verbs: ['update'],
        },
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
                  `--entryPoints.gateway.address=:${GATEWAY_PORT}`,
                  '--entryPoints.traefik.address=:9000',
                  '--ping=true',
                  '--providers.kubernetesIngress=true',
                  `--providers.kubernetesIngress.ingressClass=${INGRESS_CLASS}`,
                  '--providers.kubernetesGateway=true',
                  '--global.checkNewVersion=false',
                  '--global.sendAnonymousUsage=false',
                  '--log.level=INFO',
                ],
                ports: [
                  { name: 'web', containerPort: 8000 },
                  { name: 'gateway', containerPort: GATEWAY_PORT },
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
        ports: [
          { name: 'web', port: 80, targetPort: 'web', nodePort: INGRESS_NODE_PORT },
          { name: 'gateway', port: GATEWAY_PORT, targetPort: 'gateway', nodePort: GATEWAY_NODE_PORT },
        ],
      },
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      metadata: { name: 'traefik' },
      spec: { controllerName: 'traefik.io/gateway-controller' },
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: EDGE_GATEWAY.name, namespace: NS },
      spec: {
        gatewayClassName: 'traefik',
        // The listener's port is that of the entry point it is served on.
        listeners: [
          {
            name: EDGE_GATEWAY.sectionName,
            port: GATEWAY_PORT,
            protocol: 'HTTP',
            allowedRoutes: { namespaces: { from: 'All' } },
          },
        ],
      },
    },
  ];
  return docs.map((d) => stringify(d)).join('---\n');
}

/** `kubectl rollout status` target of the controller, for the cluster's start to wait on. */
export const TRAEFIK_DEPLOYMENT = { namespace: NS, name: 'traefik' };
