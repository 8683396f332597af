import { KubeConfig } from '@kubernetes/client-node';
import { Pool } from 'undici';
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
import { fleet, quantile } from './fleet.js';
import { keysInGit } from './keys-in-git.js';
import { CLI, memoryMiB, ROOT, start, stop } from './support.js';

/**
 * A platform's scale (`make bench ARGS=scale`): BENCH_KEYS ApiKeys (default 100,000) on the
 * harness API server, then the operator as a real process (`tollgate operator
 * --no-leader-elect`, its own Redis): how fast the keys are created, how long a cold start takes
 * to the index marker (set only over a complete index), the operator's memory, and Redis flushed
 * → every entry back. Twice, side by side: keys made as the management API makes them (under the
 * operator's finalizer already) and as `kubectl apply` makes them (no finalizer, kubectl's
 * last-applied copy in an annotation), where the bench also waits for every finalizer. Then a folder
 * of BENCH_GIT_KEYS manifests (default 10,000) applied with the real kubectl, timed until its last
 * key answers at a gateway (keys-in-git.ts). No reference to compare with: these are the figures the
 * table of tested limits in docs/reference.md quotes.
 */
/** The operator's log line for each index it built (operator/manager.ts). */
interface IndexBuilt {
  keys: number;
  writeMs: number;
  reconcileMs: number;
  sweepMs: number;
}
const phases = (b: IndexBuilt | undefined): string =>
  b === undefined
    ? ''
    : ` (entries written ${(b.writeMs / 1000).toFixed(1)} s, reconciles ${(b.reconcileMs / 1000).toFixed(1)} s, sweep ${(b.sweepMs / 1000).toFixed(1)} s)`;

/** The operator's V8 heap in use (its Prometheus default metrics): what RSS holds beyond free pages. */
async function heapUsedMiB(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('nodejs_heap_size_used_bytes '));
  return Number(line?.split(' ')[1] ?? NaN) / 2 ** 20;
}

interface Operator {
  builds: IndexBuilt[];
  synced: number[];
  /** Resolves with the operator's figures once every finalizer it had to add is in. */
  finalizers: Promise<{ added: number; ms: number }>;
  /** Seconds until the index marker is set (at once if it is). */
  marked(limitMs: number): Promise<number>;
  /** Peak RSS so far, RSS 2 s later, then RSS and V8 heap in use after 10 s (MiB). */
  memory(): Promise<{ peak: number; soon: number; settled: number; heapUsed: number }>;
  pid: number;
  stop(): Promise<void>;
}

const KEYS = Number(process.env.BENCH_KEYS ?? 100_000);
const CLIENTS = 48;
const GATEWAYS = Number(process.env.BENCH_GATEWAYS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 100);

type Kind = 'api' | 'kubectl';
const KINDS: Record<Kind, { namespace: string; label: string }> = {
  api: { namespace: 'scale', label: 'made by the management API (finalizer set)' },
  kubectl: { namespace: 'scale-kubectl', label: 'applied as kubectl applies them (no finalizer)' },
};

export async function run(): Promise<void> {
  const work = await mkdtemp(path.join(tmpdir(), 'tollgate-bench-scale-'));
  const reg = new ProcessRegistry(work);
  let running: Operator | undefined;
  const client = await (async () => {
    const kube = await startKube(reg, path.join(work, 'kube'));
    const redis = await startRedis(reg, 'scale');
    const kubectl = (...args: string[]) =>
      execFileSync(kube.kubectl, ['--kubeconfig', kube.kubeconfig, ...args], { stdio: 'ignore' });
    kubectl('apply', '-f', path.join(ROOT, 'crds'));
    for (const { namespace } of Object.values(KINDS)) kubectl('create', 'namespace', namespace);
    return { kube, redis: new Redis(redis.url), url: redis.url };
  })();
  /** `tollgate operator` as a real process on the harness API server and the bench's Redis. */
  const startOperator = async (namespace: string): Promise<Operator> => {
    const metricsPort = await freePort();
    const builds: IndexBuilt[] = [];
    const synced: number[] = [];
    let finalized: (f: { added: number; ms: number }) => void = () => undefined;
    const finalizers = new Promise<{ added: number; ms: number }>((r) => (finalized = r));
    const child = start(
      'operator',
      process.execPath,
      [
        CLI,
        'operator',
        '--no-leader-elect',
        '--namespace',
        namespace,
        // ApiKeys are believed in the operator's own namespace only (its release's).
        '--lease-namespace',
        namespace,
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
      ],
      {},
      (line) => {
        if (line.includes('"index built"')) builds.push(JSON.parse(line) as IndexBuilt);
        if (line.includes('"caches synced"')) synced.push((JSON.parse(line) as { ms: number }).ms);
        if (line.includes('"key finalizers added"'))
          finalized(JSON.parse(line) as { added: number; ms: number });
      },
    );
    const pid = child.pid ?? 0;
    const handle: Operator = {
      builds,
      synced,
      finalizers,
      pid,
      marked: async (limitMs) => {
        const from = performance.now();
        while ((await client.redis.exists(redisKeys.indexMarker)) !== 1) {
          if (performance.now() - from > limitMs) throw new Error('no index marker in time');
          await new Promise((r) => setTimeout(r, 50));
        }
        return (performance.now() - from) / 1000;
      },
      memory: async () => {
        const peak = memoryMiB(pid).peak;
        await new Promise((r) => setTimeout(r, 2_000));
        const soon = memoryMiB(pid).rss;
        await new Promise((r) => setTimeout(r, 8_000));
        return { peak, soon, settled: memoryMiB(pid).rss, heapUsed: await heapUsedMiB(metricsPort) };
      },
      stop: () => stop(child),
    };
    running = handle;
    return handle;
  };
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(client.kube.kubeconfig);
    // Keep-alive connections with the admin's client certificate: the generated client's own
    // requests set up TLS anew each time and would make creating the keys the slowest part.
    const user = kc.getCurrentUser();
    const cluster = kc.getCurrentCluster();
    const pem = (b64: string | undefined) => Buffer.from(b64 ?? '', 'base64').toString('utf8');
    const api = new Pool(client.kube.server, {
      connections: CLIENTS,
      connect: { ca: pem(cluster?.caData), cert: pem(user?.certData), key: pem(user?.keyData) },
    });

    // The same operator with no key yet: what the process itself takes, so the figure per key is
    // what the keys add.
    const bare = await startOperator(KINDS.api.namespace);
    await bare.marked(60_000);
    const empty = await bare.memory();
    await bare.stop();
    await client.redis.flushall();
    console.log(`scale: ${KEYS} ApiKeys of each kind on the harness API server`);
    console.log(
      `  operator with no key: RSS ${empty.settled.toFixed(0)} MiB, V8 heap in use ${empty.heapUsed.toFixed(0)} MiB`,
    );

    const createKeys = async (kind: Kind): Promise<number> => {
      const apiKeysPath = `/apis/tollgate.dev/v1alpha1/namespaces/${KINDS[kind].namespace}/apikeys`;
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
            const manifest = { ...made, metadata: { ...made.metadata, namespace: KINDS[kind].namespace } };
            const body =
              kind === 'api'
                ? // As the management API creates them: under the operator's finalizer already.
                  { ...made, metadata: { ...made.metadata, finalizers: [API_KEY_FINALIZER] } }
                : // As `kubectl apply` creates them: no finalizer, and its copy of what it applied.
                  {
                    ...made,
                    metadata: {
                      ...made.metadata,
                      annotations: {
                        'kubectl.kubernetes.io/last-applied-configuration': `${JSON.stringify(manifest)}\n`,
                      },
                    },
                  };
            const res = await api.request({
              method: 'POST',
              path: apiKeysPath,
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify(body),
            });
            const text = await res.body.text();
            if (res.statusCode !== 201) throw new Error(`creating a key: ${res.statusCode} ${text}`);
          }
        }),
      );
      return KEYS / ((performance.now() - created) / 1000);
    };

    /** One kind: its keys created, a cold start, memory, Redis flushed; the operator left running. */
    const measure = async (kind: Kind): Promise<Operator> => {
      const rate = await createKeys(kind);
      await client.redis.flushall();
      const operator = await startOperator(KINDS[kind].namespace);
      const firstBuild = await operator.marked(600_000);
      const entries = async () => (await client.redis.dbsize()) - 1;
      const afterBuild = await entries();
      const { peak, soon, settled, heapUsed } = await operator.memory();
      console.log(`  keys ${KINDS[kind].label}: created at ${rate.toFixed(0)} keys/s (${CLIENTS} clients)`);
      console.log(
        `    operator start -> marker (every entry written): ${firstBuild.toFixed(1)} s, ${afterBuild} of ${KEYS} entries${phases(operator.builds[0])}; caches synced in ${((operator.synced[0] ?? NaN) / 1000).toFixed(1)} s`,
      );
      console.log(
        `    operator RSS: peak ${peak.toFixed(0)} MiB, 2 s after the marker ${soon.toFixed(0)} MiB, settled ${settled.toFixed(0)} MiB (${(((settled - empty.settled) * 1024) / KEYS).toFixed(2)} KiB per key); V8 heap in use ${heapUsed.toFixed(0)} MiB (${(((heapUsed - empty.heapUsed) * 1024) / KEYS).toFixed(2)} KiB per key)`,
      );
      if (kind === 'kubectl') {
        const { added, ms } = await Promise.race([
          operator.finalizers,
          new Promise<never>((_, reject) =>
            setTimeout(() => reject(new Error('the finalizers were not all in within 30 min')), 1_800_000),
          ),
        ]);
        console.log(
          `    every finalizer in: ${(ms / 1000).toFixed(1)} s after the first was handed over (${added} added, ${(added / (ms / 1000)).toFixed(0)}/s, in the background); operator RSS peak ${memoryMiB(operator.pid).peak.toFixed(0)} MiB, now ${memoryMiB(operator.pid).rss.toFixed(0)} MiB`,
        );
      }
      await client.redis.flushall();
      const rebuild = await operator.marked(600_000);
      const afterFlush = await entries();
      console.log(
        `    Redis flushed -> marker again: ${rebuild.toFixed(1)} s, ${afterFlush} of ${KEYS} entries${phases(operator.builds.at(-1))}`,
      );
      return operator;
    };

    await (await measure('kubectl')).stop();
    await client.redis.flushall();
    const git = await keysInGit({
      kubectl: client.kube.kubectl,
      kubeconfig: client.kube.kubeconfig,
      redisUrl: client.url,
      startOperator,
      keys: Number(process.env.BENCH_GIT_KEYS ?? 10_000),
    });
    console.log(
      `  a folder of ${git.keys} ApiKey manifests, \`kubectl apply -f\` (the real kubectl): applied in ${git.applySeconds.toFixed(1)} s; its last key answered 200 at a gateway ${git.lastAnsweredSeconds.toFixed(1)} s after the apply began; ${git.answered} of ${git.keys} keys answer 200`,
    );
    await client.redis.flushall();
    await measure('api');

    const figures = await fleet({
      kubeconfig: client.kube.kubeconfig,
      redisUrl: client.url,
      namespace: KINDS.api.namespace,
      owner: 'user-7',
      gateways: GATEWAYS,
      rounds: ROUNDS,
    });

    const ms = (xs: number[]) =>
      `p50 ${quantile(xs, 0.5).toFixed(1)} ms, p99 ${quantile(xs, 0.99).toFixed(1)} ms`;
    console.log(
      `  management API (${ROUNDS} calls each): first listing ${figures.firstListSeconds.toFixed(1)} s after the gateway answered (the watch's first list)`,
    );
    console.log(`    a user's list, 1,000 keys of their own among ${KEYS}: ${ms(figures.userList)}`);
    console.log(`    a user's search: ${ms(figures.userSearch)}`);
    console.log(`    an administrator's search over every key: ${ms(figures.adminSearch)}`);
    console.log(
      `  ${figures.gateways} gateway processes on one Redis: DELETE answered -> refused at every one: ${ms(figures.revocation)}, max ${Math.max(...figures.revocation).toFixed(1)} ms`,
    );
    console.log(
      `    one key's rate limit of ${figures.rateLimit.limit} across them: ${figures.rateLimit.accepted} of ${figures.rateLimit.sent} calls accepted${figures.rateLimit.accepted === figures.rateLimit.limit ? ' (exact)' : ' (NOT EXACT)'}`,
    );
    console.log(
      `    gateway RSS: ${figures.managementRss.toFixed(0)} MiB serving the management API (every key watched), others ${quantile(figures.gatewayRss, 0.5).toFixed(0)} MiB (median)`,
    );
  } finally {
    await running?.stop();
    client.redis.disconnect();
    await reg.stopAll();
    await rm(work, { recursive: true, force: true });
  }
}
