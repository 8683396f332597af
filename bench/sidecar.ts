import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { generateKey, hashKey } from '../common/apikey/format.js';
import { KeyIndexWriter } from '../common/apikey/index-writer.js';
import { freePort } from '../common/net/free-port.js';
import { redisKeys } from '../common/redis/schema.js';
import { throwawayRedisArgs } from '../common/redis/throwaway-args.js';
import { RouteWriter } from '../common/routes/workflow-routes.js';
import { grantAudience } from '../common/resources/grant.js';
import { SIDECAR_NODE_OPTIONS } from '../common/sidecar-runtime.js';
import {
  CLI,
  fixedRate,
  fmtFixed,
  memoryMiB,
  ms,
  SECONDS,
  start,
  stop,
  stopAll,
  UPSTREAM,
  waitFor,
} from './support.js';
import { InferenceClient } from '../test/harness/grpc-clients.js';
import { testSealer, TEST_SIGNING_KEY_FILE, TEST_TRUSTED_KEYS } from '../test/integration/signing.js';

/**
 * The sidecar's figures, in one run on loopback: its memory idle and after 1,000 req/s, the
 * latency it adds in front of a workload against calling the workload directly, and what a call
 * through the central gateway costs with a sidecar behind it (the central gateway signs the grant,
 * the sidecar verifies it offline) against the central gateway alone. Latency at a fixed
 * 1,000 req/s, open loop (bench/open-loop.ts). Without a grant a sidecar behind the central
 * gateway could not let the call in at all: the central gateway never forwards the key.
 */
const RATE = 1000;
/** How long the sidecar sits without a call before its idle memory is read. */
const IDLE_MS = 12_000;
const WORKFLOW = 'bench';

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-sidecar-'));
  const ports = await Promise.all(Array.from({ length: 8 }, () => freePort()));
  const [upstreamPort, redisPort, centralPort, sidecarPort, opsPort, modelPort, modelGrpcPort, modelOpsPort] =
    ports as [number, number, number, number, number, number, number, number];
  try {
    const workload = start('upstream', process.execPath, ['-e', UPSTREAM], { PORT: String(upstreamPort) });
    start('redis', 'redis-server', throwawayRedisArgs(redisPort));
    const upstream = `http://127.0.0.1:${upstreamPort}`;
    await waitFor(`${upstream}/`);
    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    const redis = new Redis(redisUrl);
    const key = generateKey('bda');
    await new KeyIndexWriter(redis, await testSealer()).put(hashKey(key), {
      id: '0123456789abcdef0123',
      owner: 'bench',
      module: 'bda',
      roles: [WORKFLOW],
    });
    // Two services of the workflow: one reached directly, one behind its sidecar.
    const routes = new RouteWriter(redis, await testSealer());
    await routes.put(redisKeys.bdaRoute(WORKFLOW, 'direct'), {
      url: upstream,
      owner: 'bench',
      workflow: WORKFLOW,
    });
    await routes.put(redisKeys.bdaRoute(WORKFLOW, 'guarded'), {
      url: `http://127.0.0.1:${sidecarPort}`,
      owner: 'bench',
      workflow: WORKFLOW,
      grantAudience: grantAudience.service('default', WORKFLOW, 'guarded'),
    });
    // As the operator marks a complete index.
    await redis.set(redisKeys.indexMarker, new Date().toISOString());
    const auth = { authorization: `Apikey ${key}` };
    const central = start('central gateway', process.execPath, [CLI, 'gateway'], {
      NODE_OPTIONS: '',
      LOG_LEVEL: 'warn',
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_PORT: String(centralPort),
      TOLLGATE_REDIS_URL: redisUrl,
      TOLLGATE_GRANT_SIGNING_KEY_FILE: TEST_SIGNING_KEY_FILE,
    });
    await waitFor(`http://127.0.0.1:${centralPort}/healthz`);
    // As the webhook runs a sidecar in a pod: the public keys only, its heap settings.
    const asInAPod = {
      NODE_OPTIONS: SIDECAR_NODE_OPTIONS,
      LOG_LEVEL: 'warn',
      TOLLGATE_TRUSTED_KEYS: TEST_TRUSTED_KEYS,
    };
    const sidecarOf = (name: string, flags: string[], port: number, ops: number) =>
      start(
        name,
        process.execPath,
        [
          CLI,
          'sidecar',
          ...flags,
          '--host',
          '127.0.0.1',
          '--port',
          String(port),
          '--operations-port',
          String(ops),
          '--redis-url',
          redisUrl,
        ],
        asInAPod,
      );
    const sidecar = sidecarOf(
      'sidecar',
      ['--upstream', upstream, '--workflow', WORKFLOW, '--service', 'guarded'],
      sidecarPort,
      opsPort,
    );
    // A model's sidecar, as the webhook starts one for an MLServer pod: with its gRPC port (memory only).
    const modelSidecar = sidecarOf(
      'model sidecar',
      ['--upstream', upstream, '--model', 'model-bench', '--grpc-port', String(modelGrpcPort)],
      modelPort,
      modelOpsPort,
    );
    await waitFor(`http://127.0.0.1:${modelOpsPort}/readyz`);
    await waitFor(`http://127.0.0.1:${opsPort}/readyz`);
    // Just started, and then at rest: V8 gives back what starting left behind only once the
    // process has been idle a while (its memory reducer, ~8 s), and a sidecar idles most of its life.
    await sleep(1000);
    const started = memoryMiB(sidecar.pid as number);
    const modelStarted = memoryMiB(modelSidecar.pid as number);
    await sleep(IDLE_MS - 1000);
    const idle = memoryMiB(sidecar.pid as number);
    const modelIdle = memoryMiB(modelSidecar.pid as number);
    // gRPC's libraries load with the port's first connection: what that costs, once.
    const grpcClient = new InferenceClient(`127.0.0.1:${modelGrpcPort}`);
    const live = await grpcClient.call('ServerLive', {}, {});
    grpcClient.close();
    if (live.error !== undefined)
      throw new Error(`the model sidecar's gRPC ServerLive failed: ${live.error.message}`);
    await sleep(1000);
    const modelGrpc = memoryMiB(modelSidecar.pid as number);
    // Not left to share the 2 cores with the latency runs below.
    await stop(modelSidecar);

    console.log(`at a fixed ${RATE} req/s (open loop, ${SECONDS} s after a 2 s warm-up):`);
    const direct = await fixedRate(`${upstream}/`, {}, RATE, workload.pid as number);
    console.log(`  workload directly          ${fmtFixed(direct)}`);
    const alone = await fixedRate(`http://127.0.0.1:${sidecarPort}/`, auth, RATE, sidecar.pid as number);
    console.log(`  sidecar, key check         ${fmtFixed(alone)}`);
    const busy = memoryMiB(sidecar.pid as number);
    const centralOnly = await fixedRate(
      `http://127.0.0.1:${centralPort}/events/bda/${WORKFLOW}/direct/`,
      auth,
      RATE,
      central.pid as number,
    );
    console.log(`  central gateway alone      ${fmtFixed(centralOnly)}`);
    const both = await fixedRate(
      `http://127.0.0.1:${centralPort}/events/bda/${WORKFLOW}/guarded/`,
      auth,
      RATE,
      sidecar.pid as number,
    );
    console.log(`  central + sidecar (grant)  ${fmtFixed(both)}   (CPU: the sidecar's)`);
    console.log(
      `the sidecar adds p50 ${ms(alone.p50 - direct.p50).trim()} ms, p99 ${ms(alone.p99 - direct.p99).trim()} ms in front of the workload; ` +
        `behind the central gateway it adds p50 ${ms(both.p50 - centralOnly.p50).trim()} ms, p99 ${ms(both.p99 - centralOnly.p99).trim()} ms ` +
        `(sign + verify of the grant, one more hop)`,
    );
    console.log(
      `sidecar RSS 1 s after ready ${started.rss.toFixed(1)} MiB, idle (${IDLE_MS / 1000} s without calls) ${idle.rss.toFixed(1)} MiB ` +
        `(target <= 60), after ${RATE} req/s ${busy.rss.toFixed(1)} MiB (target <= 80; peak ${busy.peak.toFixed(1)} MiB); ` +
        `run as in a pod: NODE_OPTIONS=${SIDECAR_NODE_OPTIONS}, the bundle in dist/sidecar/`,
    );
    console.log(
      `a model's sidecar (gRPC port too): RSS 1 s after ready ${modelStarted.rss.toFixed(1)} MiB, idle ${modelIdle.rss.toFixed(1)} MiB ` +
        `(target <= 60), 1 s after its first gRPC call ${modelGrpc.rss.toFixed(1)} MiB (gRPC's libraries load then)`,
    );
    redis.disconnect();
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}
