import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type CoreV1Event,
  type KubeConfig,
} from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { generateKey, hashKey, keyStart } from '../../../common/apikey/format.js';
import { createLogger } from '../../../common/logger.js';
import { newApiKey, newKeyId, type ApiKey } from '../../../common/resources/apikey.js';
import type { Model } from '../../../common/resources/model.js';
import { loadKubeConfig, type PooledKubeConfig } from '../../../operator/kube-config.js';
import { kubeSources } from '../../../operator/kube-sources.js';
import { OperatorManager, type OperatorOptions } from '../../../operator/manager.js';
import { kube, type KubeInfo } from '../../harness/index.js';
import { TEST_SIGNING_KEY_FILE } from '../signing.js';
import { openKeyFile } from '../../../common/crypto/key-file.js';
import { aModel, aWorkflow } from '../../builders/resources.js';

const run = promisify(execFile);
export const ROOT = path.resolve(import.meta.dirname, '../../..');
export const PULLER_IMAGE = 'tollgate-test:1';

export interface Cluster {
  info: KubeInfo;
  kc: PooledKubeConfig;
  core: CoreV1Api;
  apps: AppsV1Api;
  custom: CustomObjectsApi;
  kubectl(...args: string[]): Promise<{ stdout: string; stderr: string }>;
}

/** The harness API server with the CRDs applied (kubectl apply -f crds/, as an installer does). */
export async function cluster(): Promise<Cluster> {
  const info = await kube();
  const kc = loadKubeConfig(info.kubeconfig);
  const kubectl = (...args: string[]) => run(info.kubectl, ['--kubeconfig', info.kubeconfig, ...args]);
  await kubectl('apply', '-f', path.join(ROOT, 'crds'));
  await kubectl(
    'wait',
    '--for=condition=Established',
    'crd/models.tollgate.dev',
    'crd/apikeys.tollgate.dev',
    'crd/workflows.tollgate.dev',
    '--timeout=30s',
  );
  return {
    info,
    kc,
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    kubectl,
  };
}

/** A namespace of the test's own, so tests can share the API server. */
export async function namespace(c: Cluster, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await c.core.createNamespace({ body: { metadata: { name } } });
  return name;
}

export const modelRef = { group: 'tollgate.dev', version: 'v1alpha1', plural: 'models' };
export const keyRef = { group: 'tollgate.dev', version: 'v1alpha1', plural: 'apikeys' };
export const workflowRef = { group: 'tollgate.dev', version: 'v1alpha1', plural: 'workflows' };

/** A workflow id no other test uses: Workflow records are cluster-scoped, the API server shared. */
export const uniqueWorkflow = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}`;

/** An administrator's Workflow record (cluster-scoped), named after its id. */
export async function createWorkflow(
  c: Cluster,
  workflow: string,
  owner: string,
  namespaces: string[],
): Promise<void> {
  await c.custom.createClusterCustomObject({
    ...workflowRef,
    body: aWorkflow(workflow, owner, namespaces),
  });
}

export async function deleteWorkflow(c: Cluster, workflow: string): Promise<void> {
  await c.custom.deleteClusterCustomObject({ ...workflowRef, name: workflow }).catch(() => undefined);
}

export async function createModel(c: Cluster, ns: string, name: string, spec: Model['spec']): Promise<Model> {
  return (await c.custom.createNamespacedCustomObject({
    ...modelRef,
    namespace: ns,
    body: aModel(name, spec),
  })) as Model;
}

export async function getModel(c: Cluster, ns: string, name: string): Promise<Model | undefined> {
  try {
    return (await c.custom.getNamespacedCustomObject({ ...modelRef, namespace: ns, name })) as Model;
  } catch {
    return undefined;
  }
}

export function startOperator(
  c: Cluster,
  ns: string,
  redisUrl: string,
  extra: Partial<OperatorOptions> = {},
  /** Who the controllers' caches list and watch as (the leader election keeps `c.kc`). */
  sourcesKc: KubeConfig = c.kc,
  /** Where ApiKeys and Identities are believed (the release's namespace); unset, `ns`. */
  keysNamespace?: string,
): OperatorManager {
  const log = createLogger('operator-test', process.env.TEST_LOG_LEVEL ?? 'silent');
  return new OperatorManager(
    () =>
      kubeSources(sourcesKc, log, {
        pullerImage: PULLER_IMAGE,
        namespace: ns,
        sameMachine: true,
        ...(keysNamespace === undefined ? {} : { keysNamespace }),
      }),
    {
      redisUrl,
      log,
      namespace: ns,
      ...(keysNamespace === undefined ? {} : { keysNamespace }),
      indexCheckMs: 200,
      signingKey: () => openKeyFile(TEST_SIGNING_KEY_FILE),
      ...extra,
    },
  );
}

/** Polls until `probe` returns a value that is not undefined/false. */
export async function eventually<T>(
  probe: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Plays the kubelet and the Deployment controller: reports `ready` of the Deployment's replicas ready. */
export async function setDeploymentReady(c: Cluster, ns: string, name: string, ready: number): Promise<void> {
  const d = await c.apps.readNamespacedDeployment({ namespace: ns, name });
  const replicas = d.spec?.replicas ?? 1;
  await c.apps.replaceNamespacedDeploymentStatus({
    namespace: ns,
    name,
    body: {
      ...d,
      status: {
        observedGeneration: d.metadata?.generation ?? 1,
        replicas,
        updatedReplicas: replicas,
        readyReplicas: ready,
        availableReplicas: ready,
        ...(ready < replicas ? { unavailableReplicas: replicas - ready } : {}),
      },
    },
  });
}

export async function eventsFor(c: Cluster, ns: string, name: string): Promise<CoreV1Event[]> {
  const list = await c.core.listNamespacedEvent({
    namespace: ns,
    fieldSelector: `involvedObject.name=${name}`,
  });
  return list.items;
}

const modelFolders = new Set<string>();

/** A model folder on local disk (file:// storage); removed by removeModelFolders. */
export async function modelFolder(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tg-model-'));
  modelFolders.add(dir);
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
  return dir;
}

/** Removes every folder modelFolder made in this test file: call it from afterAll. */
export async function removeModelFolders(): Promise<void> {
  await Promise.all([...modelFolders].map((dir) => rm(dir, { recursive: true, force: true })));
  modelFolders.clear();
}

export const npSettings = (name: string) =>
  JSON.stringify({
    name,
    implementation: 'mlserver_sklearn.SKLearnModel',
    parameters: { uri: './model.joblib', content_type: 'np' },
    inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 4] }],
    outputs: [{ name: 'label', datatype: 'INT64', shape: [-1, 1] }],
  });

/** Subscribes to a channel and collects its messages. */
export async function listen(url: string, channel: string): Promise<{ messages: string[]; close(): void }> {
  const sub = new Redis(url);
  const messages: string[] = [];
  sub.on('message', (_c: string, m: string) => messages.push(m));
  await sub.subscribe(channel);
  return { messages, close: () => sub.disconnect() };
}

/** An ApiKey resource body for a freshly generated key; returns the key's hash too. */
export function apiKeyBody(
  module: 'bda' | 'platform' = 'platform',
  owner = 'alice',
): { body: ApiKey; hash: string; id: string } {
  const key = generateKey(module);
  const id = newKeyId();
  const hash = hashKey(key);
  const spec = { hash, start: keyStart(key), module, roles: module === 'bda' ? ['wf-1'] : ['viewer'], owner };
  return { body: newApiKey(id, spec), hash, id };
}

export async function createApiKeys(
  c: Cluster,
  ns: string,
  count: number,
  parallel = 16,
): Promise<Array<{ hash: string; id: string }>> {
  const made: Array<{ hash: string; id: string }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, count) }, async () => {
      while (next < count) {
        next++;
        const k = apiKeyBody();
        await c.custom.createNamespacedCustomObject({ ...keyRef, namespace: ns, body: k.body });
        made.push({ hash: k.hash, id: k.id });
      }
    }),
  );
  return made;
}

export async function countKeys(redis: Redis, pattern: string): Promise<number> {
  let n = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    n += keys.length;
  } while (cursor !== '0');
  return n;
}
