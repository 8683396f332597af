import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentManager } from '../test/harness/manager.js';
import { HARNESS_URL_ENV } from '../test/harness/run-state.js';
import { clusterMinio } from '../test/harness/index.js';
import {
  applyDoc,
  call,
  createKey,
  eventually,
  installTollgate,
  irisInfer,
  irisModel,
  modelDoc,
  readyPodIps,
  storageSecret,
  type Installed,
  type IrisModel,
} from '../test/cluster/support.js';
import { load, fmt } from './inference.js';
import { lifecycle } from './lifecycle.js';
import { coldStarts } from './cold-starts.js';

/**
 * Tollgate on the test cluster: the time from `kubectl apply` of a Model to its first answer
 * through the gateway, then V2 inference on that model through the gateway's NodePort Service
 * against the MLServer pod called directly (both from the host, over the node's veth), in one run.
 * Then the model lifecycle (bench/lifecycle.ts): canary shift, autoscaling, cold start from zero.
 * Starts the cluster (and installs the chart) itself and removes it at the end.
 */
const MODEL = 'model-iris';
const NS = 'bench';

/** Starts the cluster, installs the chart and gives `body` a namespace with storage and a key. */
export async function onCluster(
  body: (t: Installed, iris: IrisModel, auth: Record<string, string>) => Promise<void>,
): Promise<void> {
  const runDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-cluster-'));
  const manager = new ComponentManager(runDir);
  process.env[HARNESS_URL_ENV] = await manager.listen();
  try {
    const started = Date.now();
    const t = await installTollgate();
    console.log(
      `cluster started and chart installed, every pod Ready: ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    const s3 = await clusterMinio();
    const iris = await irisModel(s3);
    await t.kubectl('create', 'namespace', NS);
    await storageSecret(t.c, NS, s3);
    const { key } = await createKey(t, 'alice', { module: 'platform', roles: ['models:inference'] });
    await body(t, iris, { authorization: `Apikey ${key}` });
    await iris.close();
    await t.cleanup();
  } finally {
    await manager.shutdown();
    rmSync(runDir, { recursive: true, force: true });
  }
}

export function run(): Promise<void> {
  return onCluster(async (t, iris, auth) => {
    await iris.upload('bench', 'iris', MODEL);
    const body = irisInfer(iris.expected.rows);
    const applied = Date.now();
    await applyDoc(t.c, modelDoc(MODEL, NS, 's3://bench/iris'));
    await eventually(
      'first answer',
      async () => {
        const r = await call(`${t.gateway}/v2/models/${MODEL}/infer`, { headers: auth, body });
        return r.status === 200 ? true : undefined;
      },
      300_000,
      100,
    );
    console.log(
      `kubectl apply of a Model to its first answer: ${((Date.now() - applied) / 1000).toFixed(1)} s`,
    );
    const [pod] = await readyPodIps(t, NS, `tollgate.dev/model=${MODEL}`);
    const direct = await load(`http://${pod}:8080/v2/models/${MODEL}/infer`, {}, JSON.stringify(body));
    const through = await load(`${t.gateway}/v2/models/${MODEL}/infer`, auth, JSON.stringify(body));
    console.log(`MLServer pod directly              ${fmt(direct)}`);
    console.log(`through the gateway (NodePort)     ${fmt(through)}`);
    console.log(`throughput ratio gateway/direct ${(through.rps / direct.rps).toFixed(3)}`);
    await lifecycle(t, iris, NS, auth);
    await coldStarts(t, iris, NS, auth);
  });
}

/** `make bench ARGS=cold-starts`: the cold starts alone, on a cluster of their own. */
export function runColdStarts(): Promise<void> {
  return onCluster((t, iris, auth) => coldStarts(t, iris, NS, auth));
}
