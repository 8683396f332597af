// A real control plane started the way controller-runtime's envtest starts it: etcd with
// --unsafe-no-fsync on a temp data dir, kube-apiserver with self-signed serving certs, an admin
// client cert in system:masters, RBAC and a service-account signing key. No kubelet, no
// controllers: objects are stored and validated, nothing is scheduled.
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

function writeKubeconfig(file: string, server: string, pki: KubePki): void {
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

export async function startKube(reg: ProcessRegistry, runDir: string): Promise<KubeInstance> {
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const pki = await makeKubePki(join(runDir, 'kube-pki'));

  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const etcd = reg.spawn(
    'etcd',
    bins.etcd,
    [
      `--data-dir=${join(runDir, 'etcd-data')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ],
    // The apiserver shuts down cleanly only while its storage is still up.
    { stopTimeoutMs: 5000, stopLast: true },
  );

  const server = `https://127.0.0.1:${apiPort}`;
  // Started right after etcd: the apiserver retries its storage connection on its own, and the
  // two boot in parallel on a 2-core machine.
  const apiserver = reg.spawn(
    'kube-apiserver',
    bins.kubeApiserver,
    [
      `--etcd-servers=${etcdUrl}`,
      `--cert-dir=${pki.dir}`,
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--client-ca-file=${pki.caCert}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--allow-privileged=true',
      // As envtest: no controller creates the default ServiceAccount here.
      '--disable-admission-plugins=ServiceAccount',
      '--authorization-mode=RBAC',
      `--service-account-issuer=${server}/`,
      `--service-account-key-file=${pki.saPublicKey}`,
      `--service-account-signing-key-file=${pki.saPrivateKey}`,
      '--v=0',
    ],
    { stopTimeoutMs: 10_000 },
  );

  await waitUntil('etcd', () => httpOk(`${etcdUrl}/health`), { timeoutMs: 30_000, proc: etcd });
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

  const kubeconfig = join(runDir, 'kubeconfig');
  writeKubeconfig(kubeconfig, server, pki);
  return { kubeconfig, server, kubectl: bins.kubectl };
}
