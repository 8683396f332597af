// The test cluster's NetworkPolicy enforcer: kube-router's firewall (built from its Go module, image
// from test/harness/images/kube-router), installed as its project's firewall-only DaemonSet: on
// the node's network, it keeps iptables chains and ipsets for every pod a policy selects. Without
// it the bridge CNI enforces nothing, and no test could show that a NetworkPolicy of the chart
// holds. (SIG Network's kube-network-policies was the first choice; it needs the nftables `queue`
// expression, which this kernel is built without.)
import { stringify } from 'yaml';

export const KUBE_ROUTER_IMAGE = 'docker.io/tollgate/kube-router:2.1.0';
export const NETPOL_DAEMONSET = { namespace: 'kube-system', name: 'kube-router' };

export function networkPolicyManifests(serviceCidr: string): string {
  const { namespace, name } = NETPOL_DAEMONSET;
  const labels = { 'k8s-app': name };
  const read = ['get', 'list', 'watch'];
  const docs: unknown[] = [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        { apiGroups: [''], resources: ['namespaces', 'pods', 'services', 'nodes', 'endpoints'], verbs: read },
        { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: read },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: read },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } },
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name, namespace, labels },
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            hostNetwork: true,
            serviceAccountName: name,
            tolerations: [{ operator: 'Exists', effect: 'NoSchedule' }],
            containers: [
              {
                name,
                image: KUBE_ROUTER_IMAGE,
                args: [
                  '--run-firewall=true',
                  '--run-router=false',
                  '--run-service-proxy=false',
                  '--hostname-override=$(NODE_NAME)',
                  `--service-cluster-ip-range=${serviceCidr}`,
                  '--metrics-port=0',
                  '--v=1',
                ],
                env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
                securityContext: { privileged: true },
                readinessProbe: { httpGet: { path: '/healthz', port: 20244 }, periodSeconds: 2 },
                // The node's kube-proxy takes the same lock before it writes iptables.
                volumeMounts: [{ name: 'xtables-lock', mountPath: '/run/xtables.lock' }],
              },
            ],
            volumes: [
              { name: 'xtables-lock', hostPath: { path: '/run/xtables.lock', type: 'FileOrCreate' } },
            ],
          },
        },
      },
    },
  ];
  return docs.map((d) => stringify(d)).join('---\n');
}
