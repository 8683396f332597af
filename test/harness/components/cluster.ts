// A single-node Kubernetes cluster that really runs containers. Everything of it lives in a
// network namespace of its own (the "node"): etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd (its own root, state, socket and CNI config), kubelet and kube-proxy
// (iptables mode). A veth pair joins the node to the host, which routes only the cluster's pod
// and service ranges to it; the node has no default route, so nothing in a pod can reach any
// address outside the cluster. CoreDNS and an ingress controller (Traefik, ingress.ts) run as
// Deployments. Images come from build-images.sh
// (buildah, no registry) and are imported into the node's containerd.
//
// Teardown (and the reaper, after a killed run) is cluster-down.sh: containers through the
// runtime, then their cgroups, mounts and the namespace, which takes the bridge, the veth, the
// routes and every iptables rule with it.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { binDir, bins, repoRoot } from '../paths.js';
import type { Managed, ProcessRegistry } from '../processes.js';
import { waitUntil } from '../wait.js';
import {
  EDGE_GATEWAY,
  GATEWAY_API_CRDS,
  GATEWAY_NODE_PORT,
  INGRESS_CLASS,
  INGRESS_NODE_PORT,
  TRAEFIK_DEPLOYMENT,
  traefikManifests,
} from './ingress.js';
import { NETPOL_DAEMONSET, networkPolicyManifests } from './network-policies.js';
import { startControlPlane } from './kube.js';
import type { ClusterInfo } from '../types.js';

const run = promisify(execFile);

export const NODE_NAME = 'tollgate-node';
const API_PORT = 6443;
const CLUSTER_DOMAIN = 'cluster.local';
const COREDNS_IMAGE = 'docker.io/tollgate/coredns:1.12.1';
const PAUSE_IMAGE = 'docker.io/tollgate/pause:3.10';
const CTR = '/usr/bin/ctr';

/** Images by the name pods use, as build-images.sh made them. */
export const CLUSTER_IMAGES = {
  tollgate: 'docker.io/tollgate/tollgate:dev',
  mlserver: 'docker.io/tollgate/mlserver:1.7.1',
  redis: 'docker.io/tollgate/redis:test',
};

interface Net {
  id: string;
  netns: string;
  hostVeth: string;
  nodeVeth: string;
  bridge: string;
  hostIp: string;
  nodeIp: string;
  podCidr: string;
  podGateway: string;
  serviceCidr: string;
  apiServiceIp: string;
  dnsIp: string;
}

function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A 10.<n>.0.0/16 that no route of the machine touches, so the cluster collides with nothing. */
function pickNet(): Net {
  const routes = sh('ip', ['-4', 'route', 'show', 'table', 'all']);
  const taken = new Set<number>();
  for (const m of routes.matchAll(/\b10\.(\d+)\./g)) taken.add(Number(m[1]));
  if (/(^|\s)10\.0\.0\.0\/8(\s|$)/.test(routes))
    throw new Error('cluster: 10.0.0.0/8 is routed on this machine');
  const free = [...Array(50).keys()].map((i) => 200 + i).find((n) => !taken.has(n));
  if (free === undefined) throw new Error('cluster: no free 10.x.0.0/16 range on this machine');
  const id = randomBytes(3).toString('hex');
  const b = `10.${free}`;
  return {
    id,
    netns: `tollgate-${id}`,
    hostVeth: `tgh-${id}`,
    nodeVeth: `tgn-${id}`,
    bridge: `tgbr-${id}`,
    hostIp: `${b}.255.1`,
    nodeIp: `${b}.255.2`,
    podCidr: `${b}.0.0/24`,
    podGateway: `${b}.0.1`,
    serviceCidr: `${b}.128.0/24`,
    apiServiceIp: `${b}.128.1`,
    dnsIp: `${b}.128.10`,
  };
}

function setUpNetwork(net: Net): void {
  const inNode = (...args: string[]): string => sh('ip', ['netns', 'exec', net.netns, ...args]);
  sh('ip', ['netns', 'add', net.netns]);
  sh('ip', ['link', 'add', net.hostVeth, 'type', 'veth', 'peer', 'name', net.nodeVeth]);
  sh('ip', ['link', 'set', net.nodeVeth, 'netns', net.netns]);
  sh('ip', ['addr', 'add', `${net.hostIp}/30`, 'dev', net.hostVeth]);
  sh('ip', ['link', 'set', net.hostVeth, 'up']);
  inNode('ip', 'addr', 'add', `${net.nodeIp}/30`, 'dev', net.nodeVeth);
  inNode('ip', 'link', 'set', net.nodeVeth, 'up');
  inNode('ip', 'link', 'set', 'lo', 'up');
  // The node routes between pods, services and the host; bridged pod traffic passes iptables
  // (kube-proxy's service rules for a pod calling a service backed by another pod on the bridge).
  inNode('sysctl', '-qw', 'net.ipv4.ip_forward=1');
  inNode('sysctl', '-qw', 'net.bridge.bridge-nf-call-iptables=1');
  // The node's own processes reach ClusterIPs too (the API server calls admission webhooks by
  // their Service): a route to pick, then kube-proxy's OUTPUT rules rewrite it to a pod.
  inNode('ip', 'route', 'add', net.serviceCidr, 'dev', net.nodeVeth);
  // The host reaches pods and services through the node, and nothing else through it.
  sh('ip', ['route', 'add', net.podCidr, 'via', net.nodeIp, 'dev', net.hostVeth]);
  sh('ip', ['route', 'add', net.serviceCidr, 'via', net.nodeIp, 'dev', net.hostVeth]);
}

function containerdConfig(dir: string, net: Net): string {
  const cni = join(dir, 'cni');
  return `version = 2
root = "${join(dir, 'containerd', 'root')}"
state = "${join(dir, 'containerd', 'state')}"
[grpc]
  address = "${join(dir, 'containerd', 'containerd.sock')}"
[ttrpc]
  address = "${join(dir, 'containerd', 'containerd.sock.ttrpc')}"
[debug]
  level = "warn"
[plugins."io.containerd.internal.v1.opt"]
  path = "${join(dir, 'containerd', 'opt')}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # The sandbox has no CAP_SYS_RESOURCE: a negative oom_score_adj would fail every container.
  restrict_oom_score_adj = true
  # Pod network namespaces under the cluster's state dir, not the machine's /run/netns.
  netns_mounts_under_state_dir = true
  enable_unprivileged_ports = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${join(cni, 'net.d')}"
# ${net.netns}
`;
}

function cniConfig(dir: string, net: Net): string {
  return JSON.stringify(
    {
      cniVersion: '0.4.0',
      name: 'tollgate',
      plugins: [
        {
          type: 'bridge',
          bridge: net.bridge,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: join(dir, 'cni', 'ipam'),
            ranges: [[{ subnet: net.podCidr, gateway: net.podGateway }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

function kubeletConfig(dir: string, net: Net, pki: { caCert: string }, cgroup: string): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: net.nodeIp,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: false },
      x509: { clientCAFile: pki.caCert },
    },
    authorization: { mode: 'AlwaysAllow' },
    containerRuntimeEndpoint: `unix://${join(dir, 'containerd', 'containerd.sock')}`,
    // The machine runs cgroup v1 (with a v2 `unified` mount).
    cgroupDriver: 'cgroupfs',
    failCgroupV1: false,
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    // Every container's cgroup sits under this one, which teardown empties and removes.
    cgroupRoot: `/${cgroup}`,
    // No CAP_SYS_RESOURCE here; 0 is what a process already has.
    oomScoreAdj: 0,
    failSwapOn: false,
    clusterDNS: [net.dnsIp],
    clusterDomain: CLUSTER_DOMAIN,
    // Pods get the cluster's DNS only: no host resolver is copied in.
    resolvConf: join(dir, 'resolv.conf'),
    // A test machine's disk is shared and can be fuller than a node's would be.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    syncFrequency: '10s',
    fileCheckFrequency: '10s',
    nodeStatusUpdateFrequency: '4s',
    volumeStatsAggPeriod: '0s',
    staticPodPath: '',
    rotateCertificates: false,
    serverTLSBootstrap: false,
    tlsCertFile: join(dir, 'pki', 'apiserver.crt'),
    tlsPrivateKeyFile: join(dir, 'pki', 'apiserver.key'),
    localStorageCapacityIsolation: true,
    shutdownGracePeriod: '0s',
  });
}

/**
 * Pod Security `baseline` for every namespace but the node's own add-ons, as a shared cluster
 * enforces it: without it a tenant's pod with hostNetwork, hostPath or privileged is on the node,
 * past every NetworkPolicy and beside every Secret the kubelet holds (docs/install.md).
 */
function admissionConfig(): string {
  return stringify({
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AdmissionConfiguration',
    plugins: [
      {
        name: 'PodSecurity',
        configuration: {
          apiVersion: 'pod-security.admission.config.k8s.io/v1',
          kind: 'PodSecurityConfiguration',
          defaults: { enforce: 'baseline', 'enforce-version': 'latest' },
          exemptions: { namespaces: ['kube-system'] },
        },
      },
    ],
  });
}

function kubeProxyConfig(dir: string, net: Net): string {
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'iptables',
    clientConnection: { kubeconfig: join(dir, 'kubeconfig') },
    hostnameOverride: NODE_NAME,
    clusterCIDR: net.podCidr,
    bindAddress: net.nodeIp,
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    // NodePorts answer on the node's address only.
    nodePortAddresses: [`${net.nodeIp}/32`],
    // The namespace's conntrack table is the machine's: leave its sizing alone.
    conntrack: { maxPerCore: 0, min: 0 },
    oomScoreAdj: 0,
    iptables: { syncPeriod: '10s', minSyncPeriod: '0s' },
  });
}

function corednsManifests(net: Net): string {
  const corefile = `.:1053 {
    errors
    health :8080
    ready :8181
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
      pods insecure
      ttl 5
    }
    cache 5
    loadbalance
}
`;
  const docs: unknown[] = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: 'kube-system' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:coredns' },
      rules: [
        {
          apiGroups: [''],
          resources: ['endpoints', 'services', 'pods', 'namespaces'],
          verbs: ['list', 'watch'],
        },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }],
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'coredns', namespace: 'kube-system' },
      data: { Corefile: corefile },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { 'k8s-app': 'kube-dns' } },
        template: {
          metadata: { labels: { 'k8s-app': 'kube-dns' } },
          spec: {
            serviceAccountName: 'coredns',
            dnsPolicy: 'Default',
            containers: [
              {
                name: 'coredns',
                image: COREDNS_IMAGE,
                imagePullPolicy: 'IfNotPresent',
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 1053, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 1053, protocol: 'TCP' },
                ],
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 2 },
                livenessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10 },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns' }],
                securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true },
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: {
        clusterIP: net.dnsIp,
        selector: { 'k8s-app': 'kube-dns' },
        ports: [
          { name: 'dns', port: 53, targetPort: 1053, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, targetPort: 1053, protocol: 'TCP' },
        ],
      },
    },
  ];
  return docs.map((d) => stringify(d)).join('---\n');
}

/** The image archives build-images.sh made (building what is missing), as "<ref> <file>" lines. */
async function imageArchives(): Promise<string[]> {
  const { stdout } = await run('bash', [join(repoRoot, 'test/harness/build-images.sh')], {
    maxBuffer: 1 << 20,
    timeout: 40 * 60_000,
  });
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => l.split(' ')[1] ?? '');
}

export async function startCluster(reg: ProcessRegistry, runDir: string): Promise<ClusterInfo> {
  const started = Date.now();
  const dir = join(runDir, 'cluster');
  mkdirSync(join(dir, 'cni', 'net.d'), { recursive: true });
  mkdirSync(join(dir, 'containerd'), { recursive: true });
  mkdirSync(join(dir, 'kubelet'), { recursive: true });
  const net = pickNet();
  const cgroup = `tollgate-${net.id}`;
  const sock = join(dir, 'containerd', 'containerd.sock');
  // What cluster-down.sh needs, written before anything exists that it would have to remove.
  writeFileSync(
    join(dir, 'cluster.env'),
    `NETNS=${net.netns}\nCGROUP=${cgroup}\nCONTAINERD_SOCK=${sock}\nCTR=${CTR}\n`,
  );
  reg.addCleanup('cluster', join(repoRoot, 'test/harness/cluster-down.sh'), [dir]);

  const archivesP = imageArchives();
  setUpNetwork(net);
  const nsenter = (command: string, args: string[]): [string, string[]] => [
    'nsenter',
    [`--net=/run/netns/${net.netns}`, '--', command, ...args],
  ];
  const spawnIn = (name: string, command: string, args: string[], stopTimeoutMs = 2000): Managed =>
    reg.spawn(name, ...nsenter(command, args), { stopTimeoutMs });

  // containerd first: importing the images overlaps the control plane's start.
  writeFileSync(join(dir, 'containerd', 'config.toml'), containerdConfig(dir, net));
  writeFileSync(join(dir, 'cni', 'net.d', '10-tollgate.conflist'), cniConfig(dir, net));
  writeFileSync(join(dir, 'resolv.conf'), '# the cluster has no upstream resolver\n');
  const containerd = spawnIn('containerd', '/usr/bin/containerd', [
    '--config',
    join(dir, 'containerd', 'config.toml'),
  ]);
  const ctr = (...args: string[]): Promise<{ stdout: string }> =>
    run(CTR, ['--address', sock, '--namespace', 'k8s.io', ...args], { maxBuffer: 16 << 20 });
  await waitUntil('containerd', async () => (await ctr('version')).stdout.includes('Server'), {
    timeoutMs: 30_000,
    proc: containerd,
  });
  // Imported while the control plane starts; about 40 s warm, most of it unpacking MLServer's
  // 1.2 GB into the node's snapshots.
  const imported = archivesP.then((files) => Promise.all(files.map((f) => ctr('images', 'import', f))));

  writeFileSync(join(dir, 'admission.yaml'), admissionConfig());
  const cp = await startControlPlane(reg, {
    dir,
    bindAddress: '0.0.0.0',
    host: net.nodeIp,
    ports: { etcd: 2379, peer: 2380, api: API_PORT },
    serviceRange: net.serviceCidr,
    authorizationModes: ['Node', 'RBAC'],
    sans: [
      `IP:${net.nodeIp}`,
      `IP:${net.apiServiceIp}`,
      'DNS:kubernetes',
      'DNS:kubernetes.default',
      `DNS:kubernetes.default.svc.${CLUSTER_DOMAIN}`,
      `DNS:${NODE_NAME}`,
    ],
    extraApiArgs: [
      `--advertise-address=${net.nodeIp}`,
      `--kubelet-client-certificate=${join(dir, 'pki', 'admin.crt')}`,
      `--kubelet-client-key=${join(dir, 'pki', 'admin.key')}`,
      '--kubelet-preferred-address-types=InternalIP',
      '--endpoint-reconciler-type=lease',
      `--admission-control-config-file=${join(dir, 'admission.yaml')}`,
    ],
    wrap: nsenter,
    // Its containers are killed anyway: no graceful drain to wait for.
    stopTimeoutMs: 2000,
  });
  const kubeconfig = cp.kubeconfig;

  spawnIn('kube-controller-manager', join(binDir, 'kube-controller-manager'), [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    `--service-account-private-key-file=${cp.pki.saPrivateKey}`,
    `--root-ca-file=${cp.pki.caCert}`,
    '--use-service-account-credentials=true',
    '--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller',
    `--cluster-cidr=${net.podCidr}`,
    `--service-cluster-ip-range=${net.serviceCidr}`,
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
    '--secure-port=10257',
    // Faster reactions than a production cluster's defaults (tests wait on them).
    '--node-monitor-grace-period=20s',
    '--concurrent-deployment-syncs=5',
    '--v=1',
  ]);
  spawnIn('kube-scheduler', join(binDir, 'kube-scheduler'), [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
    '--secure-port=10259',
    '--v=1',
  ]);

  // The cgroup every container's cgroup goes under, in each v1 hierarchy.
  for (const h of ['cpu', 'cpuacct', 'cpuset', 'memory', 'devices', 'freezer', 'blkio', 'pids', 'systemd']) {
    mkdirSync(`/sys/fs/cgroup/${h}/${cgroup}`, { recursive: true });
  }
  writeFileSync(join(dir, 'kubelet', 'config.yaml'), kubeletConfig(dir, net, cp.pki, cgroup));
  const kubelet = spawnIn('kubelet', join(binDir, 'kubelet'), [
    `--config=${join(dir, 'kubelet', 'config.yaml')}`,
    `--kubeconfig=${kubeconfig}`,
    `--root-dir=${join(dir, 'kubelet', 'root')}`,
    `--cert-dir=${join(dir, 'kubelet', 'pki')}`,
    `--hostname-override=${NODE_NAME}`,
    `--node-ip=${net.nodeIp}`,
    '--v=1',
  ]);
  writeFileSync(join(dir, 'kube-proxy.yaml'), kubeProxyConfig(dir, net));
  spawnIn('kube-proxy', join(binDir, 'kube-proxy'), [`--config=${join(dir, 'kube-proxy.yaml')}`, '--v=1']);

  const kubectl = (...args: string[]): Promise<{ stdout: string }> =>
    run(bins.kubectl, ['--kubeconfig', kubeconfig, ...args], { maxBuffer: 16 << 20 });
  await waitUntil(
    `node ${NODE_NAME} Ready`,
    async () =>
      (
        await kubectl(
          'get',
          'node',
          NODE_NAME,
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        )
      ).stdout === 'True',
    { timeoutMs: 120_000, proc: kubelet, intervalMs: 500 },
  );
  await imported;
  // The cluster's add-ons: DNS, an ingress controller and Gateway API implementation (as kind's
  // ingress setup adds one, with the Gateway API's CRDs first), and a NetworkPolicy enforcer.
  // Server-side: the HTTPRoute CRD is larger than a client-side apply's annotation may hold.
  await kubectl('apply', '--server-side', '-f', GATEWAY_API_CRDS);
  await kubectl(
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...['gatewayclasses', 'gateways', 'httproutes', 'grpcroutes'].map(
      (r) => `crd/${r}.gateway.networking.k8s.io`,
    ),
  );
  const apply = execFile(bins.kubectl, ['--kubeconfig', kubeconfig, 'apply', '-f', '-']);
  apply.stdin?.end(
    `${corednsManifests(net)}---\n${traefikManifests()}---\n${networkPolicyManifests(net.serviceCidr)}`,
  );
  await new Promise<void>((res, rej) => {
    apply.once('exit', (code) => (code === 0 ? res() : rej(new Error(`add-ons apply exited ${code}`))));
  });
  const deploymentReady = (what: string, namespace: string, name: string) =>
    waitUntil(
      what,
      async () =>
        (await kubectl('-n', namespace, 'get', 'deploy', name, '-o', 'jsonpath={.status.readyReplicas}'))
          .stdout === '1',
      { timeoutMs: 120_000, intervalMs: 500 },
    );
  await Promise.all([
    deploymentReady('CoreDNS ready', 'kube-system', 'coredns'),
    deploymentReady('Traefik ready', TRAEFIK_DEPLOYMENT.namespace, TRAEFIK_DEPLOYMENT.name),
    waitUntil(
      'kube-router (NetworkPolicy) ready',
      async () =>
        (
          await kubectl(
            '-n',
            NETPOL_DAEMONSET.namespace,
            'get',
            'daemonset',
            NETPOL_DAEMONSET.name,
            '-o',
            'jsonpath={.status.numberReady}',
          )
        ).stdout === '1',
      { timeoutMs: 120_000, intervalMs: 500 },
    ),
  ]);
  // The default ServiceAccount, made by the controller manager, before any pod is created.
  await waitUntil(
    'default ServiceAccount',
    async () => {
      await kubectl('get', 'serviceaccount', 'default');
      return true;
    },
    { timeoutMs: 60_000, intervalMs: 300 },
  );

  return {
    kubeconfig,
    server: cp.server,
    kubectl: bins.kubectl,
    nodeIp: net.nodeIp,
    hostIp: net.hostIp,
    nodeName: NODE_NAME,
    podCidr: net.podCidr,
    serviceCidr: net.serviceCidr,
    dnsIp: net.dnsIp,
    netns: net.netns,
    images: CLUSTER_IMAGES,
    ingress: { className: INGRESS_CLASS, url: `http://${net.nodeIp}:${INGRESS_NODE_PORT}` },
    gatewayApi: { gateway: EDGE_GATEWAY, address: `${net.nodeIp}:${GATEWAY_NODE_PORT}` },
    startMs: Date.now() - started,
  };
}
