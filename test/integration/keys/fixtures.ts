import { KubeApiKeyStore } from '../../../common/apikey/kube-store.js';
import { createLogger } from '../../../common/logger.js';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { kube } from '../../harness/index.js';
import { LocalIssuer } from '../../../gateway/auth/local-issuer.js';

/** An admin policy under which nobody is an administrator. */
export const NO_ADMINS = { groupsClaim: 'groups', adminGroups: [] };

const CRD_FILES = ['apikeys', 'identities', 'webhooks'].map((name) =>
  fileURLToPath(new URL(`../../../crds/${name}.yaml`, import.meta.url)),
);
const run = promisify(execFile);

/**
 * A client for the harness's API server with the ApiKey and Identity CRDs applied from crds/ by kubectl, as an
 * installer applies it (a typed client would drop the schema's `enum` and `x-kubernetes-*` fields).
 */
export async function kubeWithApiKeys(): Promise<{ kc: KubeConfig; kubectl: string; kubeconfig: string }> {
  const info = await kube();
  const kubectl = (...args: string[]) => run(info.kubectl, ['--kubeconfig', info.kubeconfig, ...args]);
  for (const file of CRD_FILES) await kubectl('apply', '--server-side', '--force-conflicts', '-f', file);
  await kubectl(
    'wait',
    '--for=condition=Established',
    '--timeout=30s',
    'crd/apikeys.tollgate.dev',
    'crd/identities.tollgate.dev',
    'crd/webhooks.tollgate.dev',
  );
  const kc = new KubeConfig();
  kc.loadFromFile(info.kubeconfig);
  return { kc, kubectl: info.kubectl, kubeconfig: info.kubeconfig };
}

/** A namespace of its own for one test file. */
export async function freshNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const name = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

export const customObjects = (kc: KubeConfig): CustomObjectsApi => kc.makeApiClient(CustomObjectsApi);

const openStores: KubeApiKeyStore[] = [];

/** A key store on the test API server; its watch is stopped by `closeKeyStores`. */
export function kubeKeyStore(kc: KubeConfig, namespace: string): KubeApiKeyStore {
  const store = new KubeApiKeyStore(kc, namespace, createLogger('keys', 'silent'));
  openStores.push(store);
  return store;
}

export async function closeKeyStores(): Promise<void> {
  await Promise.all(openStores.splice(0).map((s) => s.close()));
}

const madeDirs = new Set<string>();

/** A new directory under the system's temporary folder; removed by removeTempDirs. */
export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  madeDirs.add(dir);
  return dir;
}

/** Removes every directory tempDir made in this test file: call it from afterAll. */
export async function removeTempDirs(): Promise<void> {
  await Promise.all([...madeDirs].map((dir) => rm(dir, { recursive: true, force: true })));
  madeDirs.clear();
}

/** The local identity provider with its JWKS served on loopback, as a real provider publishes it. */
export async function loopbackIdentityProvider(): Promise<{
  issuer: LocalIssuer;
  /** Holds the issuer's signing-key.json, for tests that sign claims `mint` would refuse. */
  stateDir: string;
  jwksUrl: string;
  close(): Promise<void>;
}> {
  const stateDir = await tempDir('tollgate-idp-');
  const issuer = await LocalIssuer.open(stateDir);
  const server: Server = createServer((req, res) => {
    if (req.url === '/.well-known/jwks.json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(issuer.jwks));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    issuer,
    stateDir,
    jwksUrl: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
