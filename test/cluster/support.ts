// What the cluster tests share: kubectl and helm against the run's cluster, installing Tollgate
// as the README says, an identity provider whose JWKS the gateway pods fetch, and small waits.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { LocalIssuer } from '../../gateway/auth/local-issuer.js';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { request } from 'undici';
import { binDir, repoRoot } from '../harness/paths.js';
import { cluster, serveInCluster, venv, type ClusterInfo, type MinioInfo } from '../harness/index.js';
import { aModel, aWorkflow } from '../builders/resources.js';
import type { Model } from '../../common/resources/model.js';

const run = promisify(execFile);

export const RELEASE = 'tollgate';
export const NAMESPACE = 'tollgate-system';
export const GATEWAY_NODE_PORT = 30080;
export const MLSERVER_IMAGE = 'docker.io/tollgate/mlserver:1.7.1';
/** The host name the chart's Ingress serves the gateway under, in the tests. */
export const INGRESS_HOST = 'tollgate.test';

export interface Installed {
  c: ClusterInfo;
  issuer: LocalIssuer;
  /** The gateway through its NodePort Service, from the host. */
  gateway: string;
  /** The ingress controller's NodePort, from the host (the Host header picks the Ingress rule). */
  ingress: string;
  kubectl(...args: string[]): Promise<string>;
  token(user: string): Promise<string>;
  /**
   * Leaves the cluster as the install found it, for the next test file: deletes the Models and
   * ApiKeys (while the operator still runs to take its finalizers off), the test's namespaces, the release and its
   * namespace (the operator's Secrets with it), waiting for each to be gone.
   */
  cleanup(...namespaces: string[]): Promise<void>;
}

export async function kubectlFor(c: ClusterInfo, ...args: string[]): Promise<string> {
  const { stdout } = await run(c.kubectl, ['--kubeconfig', c.kubeconfig, ...args], {
    maxBuffer: 16 << 20,
  });
  return stdout;
}

/** `kubectl apply -f -` of a YAML or JSON document. */
export async function applyDoc(c: ClusterInfo, doc: unknown): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = execFile(
      c.kubectl,
      ['--kubeconfig', c.kubeconfig, 'apply', '-f', '-'],
      (err, _out, stderr) => (err ? reject(new Error(`kubectl apply: ${stderr || err.message}`)) : resolve()),
    );
    child.stdin?.end(typeof doc === 'string' ? doc : JSON.stringify(doc));
  });
}

/**
 * The README's install: `kubectl apply -f crds/`, then `helm install` of helm/tollgate with the
 * images built from the repository and the identity provider this test serves. Waits until every
 * pod of the release is Ready.
 */
export async function installTollgate(extraSets: string[] = []): Promise<Installed> {
  const c = await cluster();
  const kubectl = (...args: string[]): Promise<string> => kubectlFor(c, ...args);
  const idpDir = await mkdtemp(join(tmpdir(), 'tollgate-cluster-idp-'));
  const issuer = await LocalIssuer.open(idpDir);
  await writeFile(join(idpDir, 'jwks.json'), JSON.stringify(issuer.jwks));
  const { url } = await serveInCluster(idpDir);

  await kubectl('apply', '-f', join(repoRoot, 'crds'));
  await kubectl(
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/models.tollgate.dev',
    'crd/apikeys.tollgate.dev',
  );
  await run(
    join(binDir, 'helm'),
    [
      '--kubeconfig',
      c.kubeconfig,
      'upgrade',
      '--install',
      RELEASE,
      join(repoRoot, 'helm', 'tollgate'),
      '--namespace',
      NAMESPACE,
      '--create-namespace',
      '--set',
      'image.repository=tollgate/tollgate',
      '--set',
      'image.tag=dev',
      '--set',
      `models.runtimeImage=${MLSERVER_IMAGE}`,
      '--set',
      'redis.image.repository=tollgate/redis',
      '--set',
      'redis.image.tag=test',
      '--set',
      'gateway.service.type=NodePort',
      '--set',
      `gateway.service.nodePort=${GATEWAY_NODE_PORT}`,
      '--set',
      'oidc.issuer=urn:tollgate:standalone',
      '--set',
      `oidc.jwksUrl=${url}/jwks.json`,
      '--set',
      'operator.replicas=2',
      '--set',
      'gateway.ingress.enabled=true',
      '--set',
      `gateway.ingress.className=${c.ingress.className}`,
      '--set',
      `gateway.ingress.host=${INGRESS_HOST}`,
      // Beside the Ingress, routes to the platform team's Gateway (Traefik's Gateway provider).
      '--set',
      'gateway.gatewayAPI.enabled=true',
      '--set-json',
      `gateway.gatewayAPI.parentRefs=${JSON.stringify([c.gatewayApi.gateway])}`,
      // The tests' Prometheus scrapes the gateways from the host, outside the cluster's pods.
      '--set-json',
      `gateway.metricsFrom=${JSON.stringify([{ ipBlock: { cidr: `${c.hostIp}/32` } }])}`,
      ...extraSets.flatMap((s) => ['--set', s]),
      '--wait',
      '--timeout',
      '5m',
    ],
    { maxBuffer: 16 << 20 },
  );
  return {
    c,
    issuer,
    gateway: `http://${c.nodeIp}:${GATEWAY_NODE_PORT}`,
    ingress: c.ingress.url,
    kubectl,
    token: (user) => issuer.mint(user),
    cleanup: async (...namespaces) => {
      // Both carry the operator's finalizers: deleted while it still runs to take them off.
      await kubectl('delete', 'models,apikeys', '--all', '--all-namespaces', '--wait', '--timeout=120s');
      // Routed Services keep the operator's route finalizer: the chart's uninstall hook takes it off.
      await run(join(binDir, 'helm'), [
        '--kubeconfig',
        c.kubeconfig,
        'uninstall',
        RELEASE,
        '--namespace',
        NAMESPACE,
        '--wait',
        '--timeout',
        '3m',
      ]);
      const kept = (
        await kubectl(
          'get',
          'services',
          '--all-namespaces',
          '-o',
          'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.finalizers}{"\\n"}{end}',
        )
      )
        .split('\n')
        .filter((l) => l.includes('tollgate.dev/route'));
      if (kept.length > 0)
        throw new Error(`uninstalled, yet Services keep the route finalizer: ${kept.join('; ')}`);
      if (namespaces.length > 0) {
        await kubectl('delete', 'namespace', ...namespaces, '--ignore-not-found', '--wait', '--timeout=180s');
      }
      await kubectl('delete', 'namespace', NAMESPACE, '--wait', '--timeout=180s');
      await rm(idpDir, { recursive: true, force: true });
    },
  };
}

/** Polls `probe` until it returns a value other than undefined. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 120_000,
  intervalMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e instanceof Error ? e.message : String(e);
    }
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms ${last}`);
    await sleep(intervalMs);
  }
}

export interface JsonReply {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

export async function call(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<JsonReply> {
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, body: jsonBody(await res.text()), headers: res.headers };
}

/** A JSON answer's object, or `{ text }` when it is not JSON. */
function jsonBody(text: string): Record<string, unknown> {
  try {
    return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    return { text };
  }
}

/**
 * A call with a chosen Host header (through an ingress controller, whose rules match on it).
 * undici's request, since fetch treats Host as its own to set.
 */
export async function callHost(
  url: string,
  host: string,
  init: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<JsonReply> {
  const res = await request(url, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: {
      host,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const body = jsonBody(await res.body.text());
  const headers = new Headers();
  for (const [k, v] of Object.entries(res.headers)) {
    if (typeof v === 'string') headers.set(k, v);
    else if (Array.isArray(v)) for (const one of v) headers.append(k, one);
  }
  return { status: res.statusCode, body, headers };
}

/** Creates a key through the gateway's management API; returns its id and value. */
export async function createKey(
  t: Installed,
  user: string,
  body: Record<string, unknown>,
): Promise<{ id: string; key: string }> {
  const r = await call(`${t.gateway}/api/v1/apikeys`, {
    headers: { authorization: `Bearer ${await t.token(user)}` },
    body,
  });
  if (r.status !== 201) throw new Error(`create key: ${r.status} ${JSON.stringify(r.body)}`);
  return { id: String(r.body['id']), key: String(r.body['key']) };
}

/** The IPs of the Ready pods matching `selector` in `ns`. */
export async function readyPodIps(t: Installed, ns: string, selector: string): Promise<string[]> {
  const out = await t.kubectl('-n', ns, 'get', 'pods', '-l', selector, '-o', 'json');
  const pods = (
    JSON.parse(out) as {
      items: Array<{
        metadata: { deletionTimestamp?: string };
        status: { podIP?: string; conditions?: Array<{ type: string; status: string }> };
      }>;
    }
  ).items;
  return pods
    .filter(
      (p) =>
        p.metadata.deletionTimestamp === undefined &&
        p.status.conditions?.some((cond) => cond.type === 'Ready' && cond.status === 'True'),
    )
    .map((p) => p.status.podIP ?? '')
    .filter((ip) => ip !== '');
}

/** The settings the spec asks for (content type, declared inputs), so the gateway checks calls. */
export const irisSettings = (name: string): string =>
  JSON.stringify({
    name,
    implementation: 'mlserver_sklearn.SKLearnModel',
    parameters: { uri: './model.joblib', content_type: 'np' },
    inputs: [{ name: 'features', datatype: 'FP64', shape: [-1, 4] }],
    outputs: [{ name: 'predict', datatype: 'INT64', shape: [-1, 1] }],
  });

export interface IrisModel {
  /** Rows and the predictions scikit-learn made for them in-process. */
  expected: { rows: number[][]; predictions: number[] };
  /** Uploads the folder to s3://<bucket>/<prefix>/ with settings naming `name`. */
  upload(bucket: string, prefix: string, name: string): Promise<void>;
  /**
   * The same settings over an estimator fitted on three of the four features: MLServer loads it
   * and serves it, and every call the gateway's checks pass fails in the model (a bad canary).
   */
  uploadBroken(bucket: string, prefix: string, name: string): Promise<void>;
  close(): Promise<void>;
}

/** An iris classifier trained here, and a MinIO client to publish it under any Model name. */
export async function irisModel(s3: MinioInfo): Promise<IrisModel> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-cluster-train-'));
  await run(venv().python, [join(repoRoot, 'test/integration/harness/fixtures/train_iris.py'), dir, 'iris']);
  const expected = JSON.parse(await readFile(join(dir, 'expected.json'), 'utf8')) as IrisModel['expected'];
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  const buckets = new Set<string>();
  const publish = async (folder: string, bucket: string, prefix: string, name: string) => {
    if (!buckets.has(bucket)) {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      buckets.add(bucket);
    }
    await writeFile(join(dir, folder, 'model-settings.json'), irisSettings(name));
    for (const f of await readdir(join(dir, folder))) {
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: `${prefix}/${f}`,
          Body: await readFile(join(dir, folder, f)),
        }),
      );
    }
  };
  return {
    expected,
    upload: (bucket, prefix, name) => publish('iris', bucket, prefix, name),
    async uploadBroken(bucket, prefix, name) {
      await mkdir(join(dir, 'broken'), { recursive: true });
      await run(venv().python, [
        '-c',
        [
          'import sys, joblib',
          'from sklearn.datasets import load_iris',
          'from sklearn.linear_model import LogisticRegression',
          'X, y = load_iris(return_X_y=True)',
          'joblib.dump(LogisticRegression(max_iter=500).fit(X[:, :3], y), sys.argv[1])',
        ].join('\n'),
        join(dir, 'broken', 'model.joblib'),
      ]);
      await publish('broken', bucket, prefix, name);
    },
    async close() {
      client.destroy();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The namespace's Secret a Model names in spec.credentials: the cluster MinIO's keys. */
export async function storageSecret(c: ClusterInfo, ns: string, s3: MinioInfo): Promise<void> {
  await applyDoc(c, {
    apiVersion: 'v1',
    kind: 'Secret',
    // Labelled for Models: in Tollgate's own namespace they may name no other Secret.
    metadata: { name: 'minio', namespace: ns, labels: { 'tollgate.dev/model-credentials': 'true' } },
    stringData: {
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      AWS_ENDPOINT_URL: s3.endpoint,
      AWS_REGION: s3.region,
    },
  });
}

/** A Model reading s3://… with the `minio` Secret, serving alice's `fraud` (see workflowRecord). */
export function modelDoc(name: string, ns: string, storageUri: string): Model {
  return aModel(
    name,
    { storageUri, credentials: { secretName: 'minio' }, workflow: 'fraud' },
    { namespace: ns },
  );
}

/** The V2 body for the iris rows. */
export const irisInfer = (rows: number[][]): unknown => ({
  inputs: [{ name: 'features', shape: [rows.length, 4], datatype: 'FP64', data: rows.flat() }],
});

/** A Model with versions "1" and "2" from s3://<bucket>/<prefix>/<version>, small requests (one node). */
export function versionedModelDoc(
  name: string,
  ns: string,
  bucket: string,
  prefix: string,
  spec: Record<string, unknown> = {},
): unknown {
  return {
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'Model',
    metadata: { name, namespace: ns },
    spec: {
      credentials: { secretName: 'minio' },
      resources: { requests: { cpu: '50m', memory: '256Mi' } },
      versions: ['1', '2'].map((v) => ({ name: v, storageUri: `s3://${bucket}/${prefix}/${v}` })),
      ...spec,
    },
  };
}

/** A Model the autoscaler runs: one replica per call in flight, up to three, to zero when idle. */
export function scaledModelDoc(name: string, ns: string, storageUri: string): unknown {
  return {
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'Model',
    metadata: { name, namespace: ns },
    spec: {
      storageUri,
      credentials: { secretName: 'minio' },
      resources: { requests: { cpu: '50m', memory: '256Mi' } },
      scaling: { minReplicas: 0, maxReplicas: 3, targetInFlight: 1, idleSeconds: 15, scaleDownSeconds: 10 },
    },
  };
}

/** A Deployment's desired and ready replicas (0, 0 when it does not exist). */
export async function deploymentReplicas(
  t: Installed,
  ns: string,
  name: string,
): Promise<{ want: number; ready: number }> {
  const out = await t.kubectl('-n', ns, 'get', 'deployment', name, '-o', 'json', '--ignore-not-found');
  if (out.trim() === '') return { want: 0, ready: 0 };
  const d = JSON.parse(out) as { spec?: { replicas?: number }; status?: { readyReplicas?: number } };
  return { want: d.spec?.replicas ?? 0, ready: d.status?.readyReplicas ?? 0 };
}

/** The names of the pods with this label selector. */
/** The gateway replicas' log lines saying a model at zero woke up (gateway/v2/activator.ts). */
export async function wakeUps(t: Installed, model: string): Promise<string[]> {
  const log = await t.kubectl(
    '-n',
    NAMESPACE,
    'logs',
    '-l',
    'app.kubernetes.io/component=gateway',
    '--tail=-1',
  );
  return log.split('\n').filter((l) => l.includes('model woke up') && l.includes(`"${model}"`));
}

export async function podNames(t: Installed, ns: string, selector: string): Promise<string[]> {
  return (await t.kubectl('-n', ns, 'get', 'pods', '-l', selector, '-o', 'name'))
    .trim()
    .split('\n')
    .filter((l) => l !== '');
}

/**
 * An administrator's Workflow record (cluster-scoped, named after the id): `owner`'s workflow,
 * served from `namespaces`. Nothing labelled with the id is routed without one.
 */
export async function workflowRecord(
  c: ClusterInfo,
  workflow: string,
  owner: string,
  namespaces: string[],
): Promise<void> {
  await applyDoc(c, aWorkflow(workflow, owner, namespaces));
}

/**
 * A workflow service for calls to land on: a Deployment answering every GET with the path it got
 * and the Authorization header it saw (the caller's key must never arrive), and its Service
 * labelled as `workflow`'s `service`, owned by `owner`. Waits for the rollout.
 */
export async function echoWorkflowService(
  t: Installed,
  ns: string,
  name: string,
  labels: { workflow: string; service: string; owner: string },
): Promise<void> {
  await workflowRecord(t.c, labels.workflow, labels.owner, [ns]);
  const echo = [
    'import http.server, json',
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    '        body = json.dumps({"path": self.path, "authorization": self.headers.get("authorization")}).encode()',
    '        self.send_response(200); self.send_header("content-type", "application/json"); self.end_headers(); self.wfile.write(body)',
    '    def log_message(self, *a): pass',
    'http.server.ThreadingHTTPServer(("", 8000), H).serve_forever()',
  ].join('\n');
  await applyDoc(t.c, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            {
              name,
              image: 'tollgate/mlserver:1.7.1',
              command: ['python3', '-c', echo],
              ports: [{ name: 'http', containerPort: 8000 }],
              readinessProbe: { tcpSocket: { port: 8000 }, periodSeconds: 1 },
            },
          ],
        },
      },
    },
  });
  await applyDoc(t.c, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: ns,
      labels: {
        'tollgate.dev/workflow': labels.workflow,
        'tollgate.dev/service': labels.service,
      },
    },
    spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8000 }] },
  });
  await t.kubectl('-n', ns, 'rollout', 'status', `deploy/${name}`, '--timeout=120s');
}
