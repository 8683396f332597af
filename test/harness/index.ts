/**
 * The test harness API. Tests ask for the real components they need; the Jest global setup's
 * component manager starts each one once per run (on free loopback ports) and stops them all at
 * the end. Unit tests never call these, so they start nothing.
 *
 *   const r = await redis();                 // the run's shared Redis
 *   const own = await redis('revocation');   // a separate one this test may stop/restart
 *   await stopRedis('revocation'); await restartRedis('revocation'); // "down", "back, empty"
 *   const k = await kube();                  // kube-apiserver + etcd, k.kubeconfig
 *   const m = await minio();                 // S3 endpoint + throw-away credentials
 *   const ml = await startMlserver(dir);     // MLServer on `dir`; await ml.stop()
 *   const browser = await launchChromium();  // playwright Browser on Debian's chromium
 */
import { HARNESS_URL_ENV } from './run-state.js';
import type { KubeInfo, MinioInfo, MlserverInfo, MlserverOptions, RedisInfo } from './types.js';

export type { KubeInfo, MinioInfo, MlserverInfo, MlserverOptions, RedisInfo, VenvInfo } from './types.js';
export { freePort } from './ports.js';
export { venvPaths as venv } from './venv.js';
export { chromiumPath, chromiumArgs, launchChromium } from './browser.js';

async function call<T>(path: string, body: Record<string, unknown> = {}): Promise<T> {
  const base = process.env[HARNESS_URL_ENV];
  if (base === undefined) {
    throw new Error(
      `${HARNESS_URL_ENV} is not set: harness components are only available to tests of the ` +
        '`integration` Jest project (its global setup starts the component manager)',
    );
  }
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const out = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new Error(`harness ${path}: ${out.error ?? res.statusText}`);
  return out;
}

/** A Redis for this run. No tag: the shared instance; a tag: a separate one, e.g. to flush or stop. */
export function redis(tag?: string): Promise<RedisInfo> {
  return call<RedisInfo>('/redis', tag === undefined ? {} : { tag });
}

/** Stops a tagged Redis ("Redis is down"); its URL refuses connections until restartRedis. */
export async function stopRedis(tag: string): Promise<void> {
  await call('/redis/stop', { tag });
}

/** Starts a tagged Redis again on the same port, empty ("Redis restarted and lost its data"). */
export function restartRedis(tag: string): Promise<RedisInfo> {
  return call<RedisInfo>('/redis/restart', { tag });
}

/** The run's Kubernetes control plane (kube-apiserver + etcd), shared by all tests. */
export function kube(): Promise<KubeInfo> {
  return call<KubeInfo>('/kube');
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
