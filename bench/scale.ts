import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { generateKey, hashKey, keyStart } from '../common/apikey/format.js';
import { redisKeys } from '../common/redis/schema.js';
import { API_KEY_FINALIZER, newApiKey, newKeyId } from '../common/resources/apikey.js';
import { startKube } from '../test/harness/components/kube.js';
import { startRedis } from '../test/harness/components/redis.js';
import { ProcessRegistry } from '../test/harness/processes.js';
import { freePort } from '../common/net/free-port.js';
import { CLI, memoryMiB, ROOT, start, stop } from './support.js';

/**
 * A platform's scale (`make bench ARGS=scale`): BENCH_KEYS ApiKeys (default 100,000) on the
 * harness API server, then the operator as a real process (`tollgate operator
 * --no-leader-elect`, its own Redis): how fast the keys are created, how long a cold start takes
 * to the index marker (set only over a complete index), the operator's memory, and Redis flushed
 * → every entry back. No reference to compare with: these are the figures the README's table of
 * tested limits quotes.
 */
const KEYS = Number(process.env.BENCH_KEYS ?? 100_000);
const CLIENTS = 48;

export async function run(): Promise<void> {
  const work = await mkdtemp(path.join(tmpdir(), 'tollgate-bench-scale-'));
  const reg = new ProcessRegistry(work);
  let operator: ReturnType<typeof start> | undefined;
  const client = await (async () => {
    const kube = await startKube(reg, path.join(work, 'kube'));
    const redis = await startRedis(reg, 'scale');
    execFileSync(kube.kubectl, ['--kubeconfig', kube.kubeconfig, 'apply', '-f', path.join(ROOT, 'crds')], {
      stdio: 'ignore',
    });
    execFileSync(kube.kubectl, ['--kubeconfig', kube.kubeconfig, 'create', 'namespace', 'scale'], {
      stdio: 'ignore',
    });
    return { kube, redis: new Redis(redis.url), url: redis.url };
  })();
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(client.kube.kubeconfig);
    const api = kc.makeApiClient(CustomObjectsApi);
    const ref = { group: 'tollgate.dev', version: 'v1alpha1', plural: 'apikeys', namespace: 'scale' };
    const created = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < KEYS) {
          next++;
          const key = generateKey('bda');
          const made = newApiKey(newKeyId(), {
            hash: hashKey(key),
            start: keyStart(key),
            module: 'bda',
            roles: ['wf'],
            owner: `user-${next % 100}`,
          });
          // As the management API creates them: under the operator's finalizer already.
          const body = { ...made, metadata: { ...made.metadata, finalizers: [API_KEY_FINALIZER] } };
          await api.createNamespacedCustomObject({ ...ref, body });
        }
      }),
    );
    const createSeconds = (performance.now() - created) / 1000;

    const metricsPort = await freePort();
    const started = performance.now();
    operator = start('operator', process.execPath, [
      CLI,
      'operator',
      '--no-leader-elect',
      '--namespace',
      'scale',
      '--kubeconfig',
      client.kube.kubeconfig,
      '--redis-url',
      client.url,
      '--signing-key-file',
      path.join(ROOT, 'test/integration/signing-key.json'),
      '--metrics-port',
      String(metricsPort),
      '--webhook-port',
      '0',
    ]);
    const pid = operator.pid ?? 0;
    const marked = async (limitMs: number): Promise<number> => {
      const from = performance.now();
      while ((await client.redis.exists(redisKeys.indexMarker)) !== 1) {
        if (performance.now() - from > limitMs) throw new Error('no index marker in time');
        await new Promise((r) => setTimeout(r, 50));
      }
      return (performance.now() - from) / 1000;
    };
    await marked(600_000);
    const firstBuild = (performance.now() - started) / 1000;
    const entries = async () => (await client.redis.dbsize()) - 1;
    const afterBuild = await entries();
    const peakAfterBuild = memoryMiB(pid).peak;
    await new Promise((r) => setTimeout(r, 10_000));
    const settled = memoryMiB(pid).rss;

    await client.redis.flushall();
    const rebuild = await marked(600_000);
    const afterFlush = await entries();

    console.log(`scale: ${KEYS} ApiKeys on the harness API server`);
    console.log(
      `  created through the API: ${(KEYS / createSeconds).toFixed(0)} keys/s (${CLIENTS} clients)`,
    );
    console.log(
      `  operator start -> marker (every entry written): ${firstBuild.toFixed(1)} s, ${afterBuild} entries`,
    );
    console.log(
      `  operator RSS: peak ${peakAfterBuild.toFixed(0)} MiB, settled ${settled.toFixed(0)} MiB (${((settled * 1024) / KEYS).toFixed(2)} KiB per key, process included)`,
    );
    console.log(`  Redis flushed -> marker again: ${rebuild.toFixed(1)} s, ${afterFlush} entries`);
  } finally {
    if (operator) await stop(operator);
    client.redis.disconnect();
    await reg.stopAll();
    await rm(work, { recursive: true, force: true });
  }
}
