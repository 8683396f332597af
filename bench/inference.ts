import { noModels } from '../gateway/v2/model-directory.js';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { generateKey, hashKey } from '../common/apikey/format.js';
import { KeyIndexWriter } from '../common/apikey/index-writer.js';
import { createLogger } from '../common/logger.js';
import { redisKeys } from '../common/redis/schema.js';
import { loadGatewayConfig } from '../gateway/config.js';
import { RouteWriter } from '../common/routes/workflow-routes.js';
import { freePort } from '../common/net/free-port.js';
import { throwawayRedisArgs } from '../common/redis/throwaway-args.js';
import { serveIris, type LocalModels } from './local-models.js';
import { testSealer } from '../test/integration/signing.js';
import { TEST_SIGNING_KEY_FILE } from '../test/integration/signing.js';
import { buildCentralGateway } from '../gateway/central-gateway.js';

/**
 * V2 inference on the iris model, keep-alive, 32 connections: MLServer directly, then through the
 * gateway (key check, route, metadata-checked request), in one run; then the same through the
 * gateway over gRPC (32 calls in flight on one channel, raw tensors, as tritonclient.grpc sends
 * them), against MLServer's own gRPC port. Targets: REST through the gateway keeps at least 0.95
 * of MLServer's REST and adds under 1 ms at p50; gRPC keeps at least 0.9 of MLServer's gRPC. BENCH_SECONDS sets each run's length (default 10). The load is generated in a worker
 * thread or a process of its own, so the in-process gateway has its event loop to itself.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 32;
const LATENCY_SAMPLES = 1_000;
const ROOT = join(import.meta.dirname, '..');
const MODEL = 'model-iris';

const BODY = JSON.stringify({
  inputs: [
    { name: 'features', datatype: 'FP32', shape: [2, 4], data: [5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3] },
  ],
});

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  bad: number;
}

/** Saturating load: throughput, and latency under queueing. */
export async function load(url: string, headers: Record<string, string>, body = BODY): Promise<Figures> {
  const base = {
    url,
    method: 'POST' as const,
    body,
    headers: { ...headers, 'content-type': 'application/json' },
    connections: CONNECTIONS,
    workers: 1,
  };
  await autocannon({ ...base, duration: 2 });
  const r = await autocannon({ ...base, duration: SECONDS });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    bad: r.non2xx + r.errors + r.timeouts,
  };
}

/**
 * The latency the gateway adds, without queueing: one request at a time on a kept-alive
 * connection, alternating direct and gateway calls so both see the same machine load; medians in
 * microseconds.
 */
async function unloadedMedians(
  direct: string,
  gateway: string,
  auth: Record<string, string>,
): Promise<{ direct: number; gateway: number }> {
  const agent = new Agent({ connections: 1 });
  const headers = { 'content-type': 'application/json' };
  const once = async (url: string, extra: Record<string, string>): Promise<number> => {
    const started = performance.now();
    const res = await request(url, {
      method: 'POST',
      body: BODY,
      headers: { ...headers, ...extra },
      dispatcher: agent,
    });
    await res.body.dump();
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
    return (performance.now() - started) * 1000;
  };
  const d: number[] = [];
  const g: number[] = [];
  try {
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      d.push(await once(direct, {}));
      g.push(await once(gateway, auth));
    }
  } finally {
    await agent.close();
  }
  const median = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  return { direct: median(d), gateway: median(g) };
}

export const fmt = (f: Figures): string =>
  `${Math.round(f.rps).toString().padStart(6)} req/s   p50 ${f.p50.toFixed(2).padStart(6)} ms   p99 ${f.p99
    .toFixed(2)
    .padStart(6)} ms${f.bad > 0 ? `   (${f.bad} non-2xx/errors)` : ''}`;

/** Resolves once something accepts TCP connections on the port: a just-spawned redis-server. */
async function waitForPort(port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after 10 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The figures as printable lines. */
export async function runInferenceBench(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-inference-'));
  const log = createLogger('bench', 'silent');
  const redisPort = await freePort();
  const redisServer = spawn('redis-server', throwawayRedisArgs(redisPort), {
    stdio: 'ignore',
  });
  let stopGateway: (() => Promise<void>) | undefined;
  let models: LocalModels | undefined;
  let redis: Redis | undefined;
  try {
    // Connecting before redis-server listens would make the first attempts fail: wait for it, and
    // report any later error instead of leaving it unhandled.
    await waitForPort(redisPort);
    redis = new Redis(`redis://127.0.0.1:${redisPort}`, { maxRetriesPerRequest: 5 });
    redis.on('error', (err: Error) => console.error(`bench redis client: ${err.message}`));
    models = await serveIris(dir, [MODEL], log);
    const state = models.states.get(MODEL);
    if (state === undefined) throw new Error(`${MODEL} is not served`);
    await new RouteWriter(redis, await testSealer()).put(redisKeys.modelRoute(MODEL), {
      url: state.url,
      source: 'bench',
    });
    const key = generateKey('platform');
    await new KeyIndexWriter(redis, await testSealer()).put(hashKey(key), {
      id: '0000000000000000bench',
      owner: 'bench',
      module: 'platform',
      roles: ['models:inference'],
    });
    // As the operator marks a complete index.
    await redis.set(redisKeys.indexMarker, new Date().toISOString());

    const config = loadGatewayConfig({
      env: {},
      overrides: {
        grantSigningKeyFile: TEST_SIGNING_KEY_FILE,
        host: '127.0.0.1',
        port: 0,
        redisUrl: `redis://127.0.0.1:${redisPort}`,
      },
    });
    const gateway = await buildCentralGateway(config, log, { models: noModels });
    const port = (await gateway.listen(0, '127.0.0.1')).port;
    const grpcPort = await gateway.listenGrpc(0, '127.0.0.1');
    stopGateway = () => gateway.shutdown();

    // Until the pub/sub subscription is confirmed the gateway trusts no cache (by design): wait.
    for (let i = 0; i < 100 && !gateway.services.invalidation.live; i++)
      await new Promise((r) => setTimeout(r, 50));
    const directUrl = `${state.url}/v2/models/${MODEL}/infer`;
    const gatewayUrl = `http://127.0.0.1:${port}/v2/models/${MODEL}/infer`;
    const auth = { authorization: `Apikey ${key}` };
    const direct = await load(directUrl, {});
    const through = await load(gatewayUrl, auth);
    // At saturation p50 is queueing; the latency the gateway adds is read one request at a time.
    const medians = await unloadedMedians(directUrl, gatewayUrl, auth);
    const ratio = through.rps / direct.rps;
    const grpcLoad = async (address: string): Promise<Figures> => {
      const { stdout } = await promisify(execFile)(process.execPath, [
        join(ROOT, 'node_modules/tsx/dist/cli.mjs'),
        join(ROOT, 'bench/grpc-load.ts'),
        address,
        MODEL,
        key,
        String(SECONDS),
        String(CONNECTIONS),
      ]);
      return JSON.parse(stdout) as Figures;
    };
    if (state.grpcAddress === undefined) throw new Error("MLServer's gRPC address is not known");
    const grpcDirect = await grpcLoad(state.grpcAddress);
    const grpc = await grpcLoad(`127.0.0.1:${grpcPort}`);
    return [
      `iris, 2 rows per request, keep-alive, ${SECONDS} s per run`,
      `${CONNECTIONS} connections, MLServer directly     ${fmt(direct)}`,
      `${CONNECTIONS} connections, through the gateway   ${fmt(through)}`,
      `one at a time, median of ${LATENCY_SAMPLES}: MLServer directly ${(medians.direct / 1000).toFixed(3)} ms, through the gateway ${(medians.gateway / 1000).toFixed(3)} ms`,
      `REST throughput ratio ${ratio.toFixed(3)} (target >= 0.95)   added p50 ${((medians.gateway - medians.direct) / 1000).toFixed(3)} ms (target < 1 ms)`,
      `${CONNECTIONS} in flight, gRPC to MLServer directly ${fmt(grpcDirect)}`,
      `${CONNECTIONS} in flight, gRPC through the gateway  ${fmt(grpc)}   (the runtime is spoken to over REST)`,
      `gRPC throughput ratio ${(grpc.rps / grpcDirect.rps).toFixed(3)} (target >= 0.9)`,
    ];
  } finally {
    await stopGateway?.();
    await models?.stop();
    redis?.disconnect();
    redisServer.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  for (const line of await runInferenceBench()) console.log(line);
}
