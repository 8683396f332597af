// A real control plane started the way controller-runtime's envtest starts it: etcd with
// --unsafe-no-fsync on a temp data dir, kube-apiserver with self-signed serving certs, an admin
// client cert in system:masters, RBAC and a service-account signing key. startKube runs it alone
// on loopback (objects are stored and validated, nothing is scheduled); the test cluster
// (cluster.ts) runs the same one inside its node's network namespace, with controllers and a
// kubelet.
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { makeKubePki, type KubePki } from '../certs.js';
import { bins } from '../paths.js';
import { freePort } from '../../../common/net/free-port.js';
import type { ProcessRegistry } from '../processes.js';
import { httpOk, waitUntil } from '../wait.js';

export interface KubeInstance {
  kubeconfig: string;
  server: string;
  kubectl: string;
}

/** GET over mutual TLS with the admin cert; resolves with the status code. */
function adminGet(server: string, path: string, pki: KubePki): Promise<number> {
  return new Promise((resolveGet, reject) => {
    const req = request(
      `${server}${path}`,
      {
        ca: readFileSync(pki.caCert),
        cert: readFileSync(pki.clientCert),
        key: readFileSync(pki.clientKey),
        timeout: 2000,
      },
      (res) => {
        res.resume();
        resolveGet(res.statusCode ?? 0);
      },
    );
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

export function writeKubeconfig(file: string, server: string, pki: KubePki): void {
  const b64 = (f: string): string => readFileSync(f).toString('base64');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'tollgate-test', cluster: { server, 'certificate-authority-data': b64(pki.caCert) } }],
    users: [
      {
        name: 'tollgate-admin',
        user: { 'client-certificate-data': b64(pki.clientCert), 'client-key-data': b64(pki.clientKey) },
      },
    ],
    contexts: [
      {
        name: 'tollgate-test',
        context: { cluster: 'tollgate-test', user: 'tollgate-admin', namespace: 'default' },
      },
    ],
    'current-context': 'tollgate-test',
    preferences: {},
  };
  writeFileSync(file, stringify(config), { mode: 0o600 });
}

/** How a control plane is laid out: loopback for the plain one, a node's netns for the cluster. */
export interface ControlPlaneOptions {
  dir: string;
  /** The address the apiserver binds and clients dial (127.0.0.1, or the cluster node's IP). */
  bindAddress: string;
  host: string;
  ports: { etcd: number; peer: number; api: number };
  serviceRange: string;
  /** Extra subject alternative names of the serving cert. */
  sans?: string[];
  extraApiArgs?: string[];
  /** Wraps a command, e.g. to run it inside the cluster's network namespace. */
  wrap?: (command: string, args: string[]) => [string, string[]];
  authorizationModes?: string[];
  /** How long each process may take to stop on SIGTERM (default: etcd 5 s, apiserver 10 s). */
  stopTimeoutMs?: number;
  /** Disables admission plugins that need controllers (envtest runs none). */
  disableAdmission?: string[];
}

export interface ControlPlane extends KubeInstance {
  pki: KubePki;
}

export async function startControlPlane(reg: ProcessRegistry, o: ControlPlaneOptions): Promise<ControlPlane> {
  const wrap = o.wrap ?? ((c: string, a: string[]): [string, string[]] => [c, a]);
  const pki = await makeKubePki(join(o.dir, 'pki'), o.sans ?? []);
  const etcdUrl = `http://127.0.0.1:${o.ports.etcd}`;
  const etcd = reg.spawn(
    'etcd',
    ...wrap(bins.etcd, [
      `--data-dir=${join(o.dir, 'etcd-data')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${o.ports.peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${o.ports.peer}`,
      `--initial-cluster=default=http://127.0.0.1:${o.ports.peer}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ]),
    // The apiserver shuts down cleanly only while its storage is still up.
    { stopTimeoutMs: o.stopTimeoutMs ?? 5000, stopLast: true },
  );

  const server = `https://${o.host}:${o.ports.api}`;
  const disabled = o.disableAdmission ?? [];
  // Started right after etcd: the apiserver retries its storage connection on its own, and the
  // two boot in parallel on a 2-core machine.
  const apiserver = reg.spawn(
    'kube-apiserver',
    ...wrap(bins.kubeApiserver, [
      `--etcd-servers=${etcdUrl}`,
      `--cert-dir=${pki.dir}`,
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--client-ca-file=${pki.caCert}`,
      `--bind-address=${o.bindAddress}`,
      `--secure-port=${o.ports.api}`,
      `--service-cluster-ip-range=${o.serviceRange}`,
      '--allow-privileged=true',
      ...(disabled.length > 0 ? [`--disable-admission-plugins=${disabled.join(',')}`] : []),
      `--authorization-mode=${(o.authorizationModes ?? ['RBAC']).join(',')}`,
      `--service-account-issuer=${server}/`,
      `--service-account-key-file=${pki.saPublicKey}`,
      `--service-account-signing-key-file=${pki.saPrivateKey}`,
      '--v=0',
      ...(o.extraApiArgs ?? []),
    ]),
    { stopTimeoutMs: o.stopTimeoutMs ?? 10_000 },
  );

  // Inside a namespace etcd is out of the host's reach: the apiserver's readiness covers it.
  if (o.wrap === undefined) {
    await waitUntil('etcd', () => httpOk(`${etcdUrl}/health`), { timeoutMs: 30_000, proc: etcd });
  }
  await waitUntil('kube-apiserver /readyz', async () => (await adminGet(server, '/readyz', pki)) === 200, {
    timeoutMs: 90_000,
    proc: apiserver,
    intervalMs: 200,
  });
  // /readyz can pass a moment before the system namespaces exist; tests expect `default`.
  await waitUntil(
    'namespace default',
    async () => (await adminGet(server, '/api/v1/namespaces/default', pki)) === 200,
    { timeoutMs: 30_000, proc: apiserver, intervalMs: 200 },
  );

  const kubeconfig = join(o.dir, 'kubeconfig');
  writeKubeconfig(kubeconfig, server, pki);
  return { kubeconfig, server, kubectl: bins.kubectl, pki };
}

export async function startKube(reg: ProcessRegistry, runDir: string): Promise<KubeInstance> {
  const [etcd, peer, api] = [await freePort(), await freePort(), await freePort()];
  const { kubeconfig, server, kubectl } = await startControlPlane(reg, {
    dir: runDir,
    bindAddress: '127.0.0.1',
    host: '127.0.0.1',
    ports: { etcd, peer, api },
    serviceRange: '10.0.0.0/24',
    // As envtest: no controller creates the default ServiceAccount here.
    disableAdmission: ['ServiceAccount'],
  });
  return { kubeconfig, server, kubectl };
}
