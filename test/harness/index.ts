/**
 * The test harness API. Tests ask for the real components they need; the Jest global setup's
 * component manager starts each one once per run (on free loopback ports) and stops them all at
 * the end. Unit tests never call these, so they start nothing.
 *
 *   const r = await redis();                 // this test file's own Redis
 *   const own = await redis('revocation');   // a separate one this test may stop/restart
 *   await stopRedis('revocation'); await restartRedis('revocation'); // "down", "back, empty"
 *   const k = await kube();                  // kube-apiserver + etcd, k.kubeconfig
 *   const c = await cluster();               // a real node: kubelet, containerd, images, DNS
 *   const m = await minio();                 // S3 endpoint + throw-away credentials
 *   const d = await dex('panel', {...});     // an OIDC provider with static users
 *   const ml = await startMlserver(dir);     // MLServer on `dir`; await ml.stop()
 *   const browser = await launchChromium();  // playwright Browser on Debian's chromium
 */
import { expect } from '@jest/globals';
import { request } from 'node:http';
import { relative } from 'node:path';
import { HARNESS_URL_ENV } from './run-state.js';
import type {
  ClusterInfo,
  DexInfo,
  DexOptions,
  KubeInfo,
  MinioInfo,
  MlserverInfo,
  MlserverOptions,
  PrometheusInfo,
  ProxyInfo,
  CollectorInfo,
  RedisInfo,
  RedisTlsInfo,
  SentinelInfo,
} from './types.js';

export type {
  ClusterInfo,
  DexInfo,
  DexOptions,
  KubeInfo,
  MinioInfo,
  MlserverInfo,
  MlserverOptions,
  PrometheusInfo,
  ProxyInfo,
  CollectorInfo,
  RedisInfo,
  RedisTlsInfo,
  SentinelInfo,
  VenvInfo,
} from './types.js';
export { freePort } from '../../common/net/free-port.js';
export { venvPaths as venv } from './venv.js';
export { chromiumPath, chromiumArgs, launchChromium } from './browser.js';

/**
 * POSTs to the component manager on a connection of its own (agent: false): a pooled keep-alive
 * socket, idle while a long test ran, may already be closed by the server, and reusing it fails
 * the request with ECONNRESET.
 */
function post(url: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolvePost, reject) => {
    const req = request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolvePost({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function call<T>(path: string, body: Record<string, unknown> = {}): Promise<T> {
  const base = process.env[HARNESS_URL_ENV];
  if (base === undefined) {
    throw new Error(
      `${HARNESS_URL_ENV} is not set: harness components are only available to tests of the ` +
        '`integration` Jest project (its global setup starts the component manager)',
    );
  }
  const res = await post(`${base}${path}`, JSON.stringify(body));
  const out = JSON.parse(res.text) as T & { error?: string };
  if (res.status !== 200) throw new Error(`harness ${path}: ${out.error ?? `HTTP ${res.status}`}`);
  return out;
}

/**
 * A Redis of the calling test file's own: no tag, the file's one; a tag, a separate one, e.g. to
 * flush or stop. Files never share one, so two Jest workers never meet in a route, a model name
 * or an invalidation channel (each Redis is a redis-server process of its own).
 */
export function redis(tag?: string): Promise<RedisInfo> {
  return call<RedisInfo>('/redis', { tag: tag ?? `file:${testFile()}` });
}

/** The running test file, relative to the repository (Jest knows it; the harness is Jest-only). */
function testFile(): string {
  const path = expect.getState().testPath;
  if (path === undefined) throw new Error('redis(): called outside a Jest test file');
  return relative(process.cwd(), path);
}

/** Stops a tagged Redis ("Redis is down"); its URL refuses connections until restartRedis. */
export async function stopRedis(tag: string): Promise<void> {
  await call('/redis/stop', { tag });
}

/** Starts a tagged Redis again on the same port, empty ("Redis restarted and lost its data"). */
export function restartRedis(tag: string): Promise<RedisInfo> {
  return call<RedisInfo>('/redis/restart', { tag });
}

/** A Prometheus (Debian's) scraping `targets` (full /metrics URLs) every second; stopped with the run. */
export function prometheus(tag: string, targets: string[]): Promise<PrometheusInfo> {
  return call<PrometheusInfo>('/prometheus', { tag, targets });
}

/**
 * An nginx (Debian's) with `conf` as its whole configuration, `{{port}}` its listen port, `{{dir}}`
 * its directory, `{{ping}}` a location the harness waits on; stopped with the run.
 */
export function nginx(tag: string, conf: string): Promise<ProxyInfo> {
  return call<ProxyInfo>('/nginx', { tag, conf });
}

/** A Traefik (built from its Go module) with `dynamic` as its file provider's configuration. */
export function traefik(tag: string, dynamic: string): Promise<ProxyInfo> {
  return call<ProxyInfo>('/traefik', { tag, dynamic });
}

/** An OpenTelemetry Collector (built from its Go modules) taking OTLP over HTTP; its spans by readSpans. */
export function otelCollector(tag: string): Promise<CollectorInfo> {
  return call<CollectorInfo>('/otel-collector', { tag });
}

/** A Redis for `tag` that speaks TLS only (the test CA in `caFile`) and admits one ACL user. */
export function redisTls(tag: string): Promise<RedisTlsInfo> {
  return call<RedisTlsInfo>('/redis-tls', { tag });
}

/**
 * A Sentinel-managed Redis for `tag`: primary, replica, three Sentinels (started once per tag).
 * Connect with its `url` (common/redis/connect.ts); kill members with killInSentinelGroup.
 */
export function sentinelGroup(tag: string): Promise<SentinelInfo> {
  return call<SentinelInfo>('/redis-sentinel', { tag });
}

/** SIGKILLs the data node or Sentinel listening on `port` in `tag`'s group (a crash). */
export async function killInSentinelGroup(tag: string, port: number): Promise<void> {
  await call('/redis-sentinel/kill', { tag, port: String(port) });
}

/** The run's Kubernetes control plane (kube-apiserver + etcd), shared by all tests. */
export function kube(): Promise<KubeInfo> {
  return call<KubeInfo>('/kube');
}

/**
 * The run's Kubernetes cluster with a real node (containerd, kubelet, kube-proxy, CoreDNS) and
 * the project's images loaded, shared by all tests: use a namespace of your own.
 */
export function cluster(): Promise<ClusterInfo> {
  return call<ClusterInfo>('/cluster');
}

/** Serves `dir` over HTTP inside the cluster's node namespace (pods reach it); returns its URL. */
export function serveInCluster(dir: string): Promise<{ url: string }> {
  return call<{ url: string }>('/cluster/serve', { dir });
}

/** A MinIO inside the cluster's node namespace (pods and tests reach `endpoint`): own bucket. */
export function clusterMinio(): Promise<MinioInfo> {
  return call<MinioInfo>('/cluster/minio');
}

/**
 * A Dex OpenID Connect provider for `tag` (started once per tag, with its first caller's options):
 * static users alice (groups tollgate-admins, staff) and bob (staff), one public client.
 */
export function dex(tag: string, options: DexOptions): Promise<DexInfo> {
  return call<DexInfo>('/dex', { tag, options });
}

/** The run's MinIO, shared by all tests: use a bucket of your own. */
export function minio(): Promise<MinioInfo> {
  return call<MinioInfo>('/minio');
}

/** Runs `mlserver start <modelsDir>` from the venv and waits until /v2/health/ready. */
export async function startMlserver(
  modelsDir: string,
  options: MlserverOptions = {},
): Promise<MlserverInfo & { stop(): Promise<void> }> {
  const info = await call<MlserverInfo & { id: string }>('/mlserver/start', { modelsDir, options });
  const { id, ...rest } = info;
  return { ...rest, stop: async () => void (await call('/mlserver/stop', { id })) };
}
