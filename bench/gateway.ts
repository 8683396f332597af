import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { generateKey, hashKey } from '../common/apikey/format.js';
import { KeyIndexWriter } from '../common/apikey/index-writer.js';
import { freePort } from '../common/net/free-port.js';
import { throwawayRedisArgs } from '../common/redis/throwaway-args.js';
import type { KeyGrant } from '../common/resources/grant.js';
import { RouteWriter } from '../common/routes/workflow-routes.js';
import { redisKeys } from '../common/redis/schema.js';
import {
  CLI,
  fixedRate,
  fmtFixed,
  ms,
  type FixedRate,
  ROOT,
  SECONDS,
  start,
  stop,
  stopAll,
  UPSTREAM,
  waitFor,
} from './support.js';
import { testSealer, testTrust, TEST_SIGNING_KEY_FILE } from '../test/integration/signing.js';
import { CONNECTIONS, load, warmUp, type Figures } from './wrk.js';
import { profiledCalls } from './gateway-profile.js';
import { tracingCost } from './tracing-cost.js';

/**
 * The gateway against the reference a platform team would otherwise deploy, in one run:
 *   (a) a tiny upstream on loopback, directly;
 *   (b) nginx (Debian nginx-light) proxying to it with a static `Apikey` check, keep-alive upstream;
 *   (c) the Tollgate gateway with a valid key (key check, route lookup, proxy).
 * Then both with the other worker count (1 and 2 processes, side by side), latency at a fixed
 * 1,000 req/s (bench/open-loop.ts, microseconds), and how long a second gateway process takes to
 * refuse a key deleted through the index writer. BENCH_WORKERS (default 1) sets nginx's worker_processes and
 * the gateway's Node cluster workers alike; BENCH_SECONDS (default 5) the length of each run and
 * BENCH_ROUNDS (default 3) how many interleaved rounds of throughput runs.
 */
const WORKERS = Number(process.env.BENCH_WORKERS ?? 1);
/** Throughput runs are interleaved (a, b, c, d, a, b, ...) and the median kept: on a shared machine one run proves little. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/**
 * For context, not a competitor: the floor of any Node proxy here, node:http in front of an undici
 * Pool with no checks at all. It passes the client's headers on as they came, as any proxy does
 * (nginx beside it too): one that dropped them would be no proxy a platform runs. The gateway's
 * distance to it is what its own work costs.
 */
const BARE_PROXY = `
const http = require('node:http');
const { Pool } = require(process.env.UNDICI);
const pool = new Pool(process.env.UPSTREAM, { connections: 128, pipelining: 1 });
http.createServer((req, res) => {
  pool.dispatch({ path: req.url, method: req.method, headers: req.rawHeaders, body: null }, {
    onConnect() {},
    onHeaders(status, raw) {
      const headers = [];
      for (let i = 0; i < raw.length; i += 2) headers.push(raw[i].toString('latin1'), raw[i + 1].toString('latin1'));
      res.writeHead(status, headers);
      return true;
    },
    onData(chunk) { return res.write(chunk); },
    onComplete() { res.end(); },
    onError() { res.statusCode = 502; res.end(); },
  });
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

function nginxConfig(dir: string, port: number, upstreamPort: number, key: string, workers: number): string {
  mkdirSync(dir, { recursive: true });
  const conf = `
worker_processes ${workers};
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream backend { server 127.0.0.1:${upstreamPort}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    location / {
      if ($http_authorization != "Apikey ${key}") { return 401; }
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Authorization "";
    }
  }
}`;
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, conf);
  return file;
}

/**
 * For context, the floor of an authorization service in Node: node:http answering nginx's
 * auth_request with 204 and a grant header when the key is the one it knows, 401 otherwise.
 */
const BARE_CHECK = `
const http = require('node:http');
const expected = 'Apikey ' + process.env.KEY;
http.createServer((req, res) => {
  if (req.headers.authorization === expected) res.writeHead(204, { 'x-tollgate-key-id': 'bench' });
  else res.writeHead(401);
  res.end();
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

/**
 * nginx asking Tollgate about every call (auth_request, with the configuration shipped in
 * examples/forward-auth/nginx) and proxying it itself: Tollgate's whole decision, no body through Node.
 */
function nginxAuthConfig(
  dir: string,
  port: number,
  authPort: number,
  upstreamPort: number,
  authPath = '/auth/request',
): string {
  mkdirSync(dir, { recursive: true });
  const examples = join(ROOT, 'examples', 'forward-auth', 'nginx');
  const conf = `
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream tollgate { server 127.0.0.1:${authPort}; keepalive 128; }
  upstream backend { server 127.0.0.1:${upstreamPort}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    ${authPath === '/auth/request' ? `include ${examples}/tollgate-server.conf;` : `location = /_bare_check { internal; proxy_pass http://tollgate${authPath}; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass_request_body off; proxy_set_header Content-Length ""; }`}
    location /events/bda/ {
      ${authPath === '/auth/request' ? `include ${examples}/tollgate-auth.conf;` : 'auth_request /_bare_check;'}
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}`;
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, conf);
  return file;
}

/** The run with the median throughput (its latencies travel with it). */
function median(runs: Figures[]): Figures {
  const sorted = [...runs].sort((a, b) => a.rps - b.rps);
  return sorted[Math.floor(sorted.length / 2)] as Figures;
}

const fmt = (f: Figures): string =>
  `${Math.round(f.rps).toString().padStart(7)} req/s   p50 ${f.p50.toFixed(2).padStart(6)} ms   p99 ${f.p99
    .toFixed(2)
    .padStart(
      6,
    )} ms   CPU ${f.cpuUs.toFixed(0).padStart(4)} µs/request${f.bad > 0 ? `   (${f.bad} non-2xx/errors)` : ''}`;

/** Median latency of each new key's first call (a cache miss) and of its next calls (cached). */
async function firstCalls(
  redis: Redis,
  gatewayUrl: string,
  workflow: string,
  keys: number,
): Promise<{ miss: number; hit: number }> {
  const writer = new KeyIndexWriter(redis, await testSealer());
  const agent = new Agent({ connections: 1 });
  const miss: number[] = [];
  const hit: number[] = [];
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  try {
    for (let i = 0; i < keys; i++) {
      const key = generateKey('bda');
      const id = `cold${i.toString(16).padStart(16, '0')}`;
      await writer.put(hashKey(key), { id, owner: 'bench', module: 'bda', roles: [workflow] });
      for (let n = 0; n < 3; n++) {
        const started = performance.now();
        const res = await request(`${gatewayUrl}/events/bda/${workflow}/svc/`, {
          headers: { authorization: `Apikey ${key}` },
          dispatcher: agent,
        });
        await res.body.dump();
        if (res.statusCode !== 200) throw new Error(`first calls: ${res.statusCode}`);
        (n === 0 ? miss : hit).push(performance.now() - started);
      }
      await writer.delete({ hash: hashKey(key), id });
    }
  } finally {
    await agent.close();
  }
  return { miss: median(miss), hit: median(hit) };
}

/**
 * How long a cached key still passes once Redis stops answering (every client's commands held by
 * CLIENT PAUSE, the heartbeat's pings too): from the pause to the last call that passed, over
 * `rounds` freezes. The documented bound is two heartbeats (docs/calling.md).
 */
async function frozenWindow(
  redisUrl: string,
  gatewayUrl: string,
  key: string,
  rounds: number,
): Promise<number[]> {
  const agent = new Agent({ connections: 1 });
  const call = async (): Promise<number> => {
    const res = await request(gatewayUrl, { headers: { authorization: `Apikey ${key}` }, dispatcher: agent });
    await res.body.dump();
    return res.statusCode;
  };
  const windows: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      // Answering again (and its caches trusted again) before each freeze.
      const back = performance.now() + 10_000;
      while ((await call()) !== 200)
        if (performance.now() > back) throw new Error('frozen Redis: not answering after the pause');
      const pauser = new Redis(redisUrl);
      const paused = performance.now();
      await pauser.call('CLIENT', 'PAUSE', '3000', 'ALL');
      let lastPassed = paused;
      for (;;) {
        const sent = performance.now();
        if ((await call()) !== 200) break;
        lastPassed = sent;
        if (sent - paused > 2_900)
          throw new Error('frozen Redis: cached keys still pass near the end of the pause');
      }
      windows.push(lastPassed - paused);
      await pauser.call('CLIENT', 'UNPAUSE');
      pauser.disconnect();
    }
  } finally {
    await agent.close();
  }
  return windows;
}

/** CPU time of sealing an index entry and of checking its seal, in µs each. */
async function sealCost(rounds: number): Promise<{ seal: number; open: number }> {
  const { sealer, verifier } = await testTrust();
  if (sealer === undefined) throw new Error('the bench trust has no sealer');
  const key = `tg:key:${'a'.repeat(64)}`;
  const payload = JSON.stringify({ id: 'bench', owner: 'bench', module: 'bda', roles: ['wf'] });
  let started = performance.now();
  let sealed = '';
  for (let i = 0; i < rounds; i++) sealed = await sealer.seal(key, payload);
  const seal = ((performance.now() - started) * 1000) / rounds;
  started = performance.now();
  for (let i = 0; i < rounds; i++) if (!verifier.open(key, sealed).ok) throw new Error('seal check failed');
  return { seal, open: ((performance.now() - started) * 1000) / rounds };
}

async function revocationLatency(
  redis: Redis,
  gatewayUrl: string,
  workflow: string,
  rounds: number,
): Promise<number[]> {
  const writer = new KeyIndexWriter(redis, await testSealer());
  const agent = new Agent({ connections: 1 });
  const samples: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const key = generateKey('bda');
      const hash = hashKey(key);
      const grant: KeyGrant = {
        id: `bench${i.toString(16).padStart(15, '0')}`,
        owner: 'bench',
        module: 'bda',
        roles: [workflow],
      };
      await writer.put(hash, grant);
      const call = async (): Promise<number> => {
        const res = await request(`${gatewayUrl}/events/bda/${workflow}/svc/`, {
          headers: { authorization: `Apikey ${key}` },
          dispatcher: agent,
        });
        await res.body.dump();
        return res.statusCode;
      };
      for (let w = 0; w < 5; w++)
        if ((await call()) !== 200) throw new Error('revocation: the new key was refused');
      const started = performance.now();
      await writer.delete({ hash, id: grant.id });
      while ((await call()) === 200) {
        if (performance.now() - started > 5000) throw new Error('revocation: the key still works after 5 s');
      }
      samples.push(performance.now() - started);
    }
  } finally {
    await agent.close();
  }
  return samples;
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const [
    upstreamPort,
    nginxPort,
    redisPort,
    gatewayPort,
    secondPort,
    barePort,
    plainPort,
    otherNginxPort,
    otherGatewayPort,
    leanPort,
    nginxAuthPort,
    bareCheckPort,
    nginxBareAuthPort,
  ] = (await Promise.all(Array.from({ length: 13 }, () => freePort()))) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  try {
    const upstreamProc = start('upstream', process.execPath, ['-e', UPSTREAM], {
      PORT: String(upstreamPort),
    });
    start('redis', 'redis-server', throwawayRedisArgs(redisPort));
    const upstream = `http://127.0.0.1:${upstreamPort}/`;
    await waitFor(upstream);

    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    const redis = new Redis(redisUrl);
    const workflow = 'bench';
    const key = generateKey('bda');
    await new KeyIndexWriter(redis, await testSealer()).put(hashKey(key), {
      id: '0123456789abcdef0123',
      owner: 'bench',
      module: 'bda',
      roles: [workflow],
    });
    // A key with credits and two named limits, of an identity with a limit of its own, none of
    // them reached: what counting them costs.
    const budgetedKey = generateKey('bda');
    await new KeyIndexWriter(redis, await testSealer()).put(hashKey(budgetedKey), {
      id: '0123456789abcdef0124',
      owner: 'bench',
      module: 'bda',
      roles: [workflow],
      credits: { amount: 1_000_000_000 },
      limits: [
        { name: 'burst', requests: 1_000_000_000, windowSeconds: 1 },
        { name: 'per-day', requests: 1_000_000_000, windowSeconds: 86_400 },
      ],
      identity: {
        name: 'acme',
        account: '@0123456789abcdef01234567',
        limits: [{ name: 'per-minute', requests: 1_000_000_000, windowSeconds: 60 }],
      },
    });
    // A key with one plain rate limit: the Redis round trip any counted key pays, alone.
    const limitedKey = generateKey('bda');
    await new KeyIndexWriter(redis, await testSealer()).put(hashKey(limitedKey), {
      id: '0123456789abcdef0125',
      owner: 'bench',
      module: 'bda',
      roles: [workflow],
      rateLimit: { requests: 1_000_000, windowSeconds: 1 },
    });
    // As the operator writes a labelled Service's route.
    await new RouteWriter(redis, await testSealer()).put(redisKeys.bdaRoute(workflow, 'svc'), {
      url: `http://127.0.0.1:${upstreamPort}`,
      owner: 'bench',
      workflow,
    });
    // As the operator marks a complete index: without it a miss is "retry", not "no".
    await redis.set(redisKeys.indexMarker, new Date().toISOString());
    const auth = { authorization: `Apikey ${key}` };

    const startNginx = (name: string, prefix: string, port: number, workers: number) =>
      start(name, 'nginx', ['-p', prefix, '-c', nginxConfig(prefix, port, upstreamPort, key, workers)]);
    const nginxProc = startNginx('nginx', dir, nginxPort, WORKERS);
    const nginx = `http://127.0.0.1:${nginxPort}/`;
    await waitFor(nginx, auth);
    await waitFor(nginx, {}, 401);

    const gatewayEnv = (port: number): NodeJS.ProcessEnv => ({
      NODE_OPTIONS: '',
      LOG_LEVEL: 'warn',
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_PORT: String(port),
      TOLLGATE_REDIS_URL: redisUrl,
      TOLLGATE_GRANT_SIGNING_KEY_FILE: TEST_SIGNING_KEY_FILE,
    });
    const cli = CLI;
    const startGateway = (name: string, port: number, workers: number, env: NodeJS.ProcessEnv = {}) =>
      start(name, process.execPath, [cli, 'gateway', '--workers', String(workers)], {
        ...gatewayEnv(port),
        ...env,
      });
    const gatewayProc = startGateway('gateway', gatewayPort, WORKERS);
    const gateway = `http://127.0.0.1:${gatewayPort}/events/bda/${workflow}/svc/`;
    await waitFor(gateway, auth);
    await waitFor(gateway, {}, 401);

    // The same gateway counting totals only: what usage over time (per minute, per hour, per
    // endpoint) costs is the distance between the two.
    const plainProc = startGateway('gateway, totals only', plainPort, WORKERS, {
      TOLLGATE_USAGE_SERIES: 'false',
    });
    const plain = `http://127.0.0.1:${plainPort}/events/bda/${workflow}/svc/`;
    await waitFor(plain, auth);

    const bareProc = start('bare proxy', process.execPath, ['-e', BARE_PROXY], {
      PORT: String(barePort),
      UPSTREAM: `http://127.0.0.1:${upstreamPort}`,
      UNDICI: join(ROOT, 'node_modules', 'undici'),
    });
    const bare = `http://127.0.0.1:${barePort}/`;
    await waitFor(bare);
    const leanProc = start('llhttp proxy', process.execPath, [join(ROOT, 'bench', 'llhttp-proxy.mjs')], {
      PORT: String(leanPort),
      UPSTREAM: `http://127.0.0.1:${upstreamPort}`,
    });
    const lean = `http://127.0.0.1:${leanPort}/`;
    await waitFor(lean);
    const nginxAuthDir = join(dir, 'nginx-auth');
    const nginxAuthProc = start('nginx + auth_request', 'nginx', [
      '-p',
      nginxAuthDir,
      '-c',
      nginxAuthConfig(nginxAuthDir, nginxAuthPort, gatewayPort, upstreamPort),
    ]);
    const nginxAuth = `http://127.0.0.1:${nginxAuthPort}/events/bda/${workflow}/svc/`;
    await waitFor(nginxAuth, auth);
    await waitFor(nginxAuth, {}, 401);
    start('bare check', process.execPath, ['-e', BARE_CHECK], { PORT: String(bareCheckPort), KEY: key });
    const nginxBareDir = join(dir, 'nginx-bare-auth');
    const nginxBareProc = start('nginx + auth_request to a bare check', 'nginx', [
      '-p',
      nginxBareDir,
      '-c',
      nginxAuthConfig(nginxBareDir, nginxBareAuthPort, bareCheckPort, upstreamPort, '/'),
    ]);
    const nginxBare = `http://127.0.0.1:${nginxBareAuthPort}/events/bda/${workflow}/svc/`;
    await waitFor(nginxBare, auth);

    console.log(
      `loopback, ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${SECONDS} s per target (medians shown), ` +
        `after a 2 s warm-up each; nginx worker_processes ${WORKERS}, gateway ` +
        `${WORKERS === 1 ? '1 process (no cluster)' : `${WORKERS} Node cluster workers`}; load from wrk (1 thread) on the same machine; ` +
        `load average at start ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs`,
    );
    const pid = (p: { pid?: number | undefined }): number => p.pid as number;
    const targets = {
      direct: { url: upstream, headers: {}, pid: pid(upstreamProc) },
      nginx: { url: nginx, headers: auth, pid: pid(nginxProc) },
      gateway: { url: gateway, headers: auth, pid: pid(gatewayProc) },
      budgeted: { url: gateway, headers: { authorization: `Apikey ${budgetedKey}` }, pid: pid(gatewayProc) },
      limited: { url: gateway, headers: { authorization: `Apikey ${limitedKey}` }, pid: pid(gatewayProc) },
      plain: { url: plain, headers: auth, pid: pid(plainProc) },
      bare: { url: bare, headers: {}, pid: pid(bareProc) },
      lean: { url: lean, headers: {}, pid: pid(leanProc) },
      nginxAuth: { url: nginxAuth, headers: auth, pid: pid(nginxAuthProc) },
      nginxBare: { url: nginxBare, headers: auth, pid: pid(nginxBareProc) },
    };
    const runs: Record<keyof typeof targets, Figures[]> = {
      direct: [],
      nginx: [],
      gateway: [],
      budgeted: [],
      limited: [],
      plain: [],
      bare: [],
      lean: [],
      nginxAuth: [],
      nginxBare: [],
    };
    for (const { url, headers } of Object.values(targets)) await warmUp(url, headers);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, { url, headers, pid: target }] of Object.entries(targets) as Array<
        [keyof typeof targets, (typeof targets)['direct']]
      >) {
        runs[name].push(await load(url, headers, target));
      }
    }
    const direct = median(runs.direct);
    const viaNginx = median(runs.nginx);
    const viaGateway = median(runs.gateway);
    const viaBare = median(runs.bare);
    const viaLean = median(runs.lean);
    const viaPlain = median(runs.plain);
    const viaBudgeted = median(runs.budgeted);
    const viaLimited = median(runs.limited);
    const viaNginxAuth = median(runs.nginxAuth);
    const viaNginxBare = median(runs.nginxBare);
    console.log(`(a) upstream direct   ${fmt(direct)}`);
    console.log(`(b) nginx + key check ${fmt(viaNginx)}`);
    console.log(`(c) tollgate gateway  ${fmt(viaGateway)}`);
    console.log(
      `(d) bare node proxy   ${fmt(viaBare)}   (no checks: the floor of a Node proxy, for context)`,
    );
    console.log(
      `(e) gateway, totals   ${fmt(viaPlain)}   (usageSeries off: no per-minute/hour/endpoint counting)`,
    );
    console.log(
      `(h) llhttp proxy      ${fmt(viaLean)}   (no checks: Node's own parser on raw sockets, no node:http or undici; bench/llhttp-proxy.mjs)`,
    );
    console.log(
      `(f) gateway, a key with credits, two named limits and an identity's limit ${fmt(viaBudgeted)}`,
    );
    console.log(`(g) gateway, a key with one rateLimit ${fmt(viaLimited)}`);
    console.log(
      `(i) nginx + auth_request to Tollgate ${fmt(viaNginxAuth)}   (Tollgate's whole decision, nginx proxies; CPU is nginx's alone)`,
    );
    console.log(
      `the decision in nginx: nginx + auth_request to Tollgate / nginx alone ${(viaNginxAuth.rps / viaNginx.rps).toFixed(3)} ` +
        `(target >= 0.5; per round: ${runs.nginxAuth.map((g, i) => (g.rps / (runs.nginx[i]?.rps ?? NaN)).toFixed(3)).join(', ')}), ` +
        `over the gateway itself ${(viaNginxAuth.rps / viaGateway.rps).toFixed(3)}`,
    );
    console.log(
      `(j) nginx + auth_request to a bare Node check ${fmt(viaNginxBare)}   (for context: the floor of a Node authorization service)`,
    );
    console.log(
      `  the floor/nginx alone ${(viaNginxBare.rps / viaNginx.rps).toFixed(3)}; Tollgate's decision/the floor ${(viaNginxAuth.rps / viaNginxBare.rps).toFixed(3)} ` +
        `(per round: ${runs.nginxAuth.map((g, i) => (g.rps / (runs.nginxBare[i]?.rps ?? NaN)).toFixed(3)).join(', ')})`,
    );
    console.log(
      `a counted key's Redis round trip: rateLimit/plain key ${(viaLimited.rps / viaGateway.rps).toFixed(3)}; ` +
        `credits + two named limits over one rateLimit (the same one round trip): ${(viaBudgeted.rps / viaLimited.rps).toFixed(3)}`,
    );
    console.log(
      `credits + two named limits + an identity's limit cost: budgeted/plain key ${(viaBudgeted.rps / viaGateway.rps).toFixed(3)} ` +
        `(per round: ${runs.budgeted.map((b, i) => (b.rps / (runs.gateway[i]?.rps ?? NaN)).toFixed(3)).join(', ')})`,
    );
    const ofBare = (f: Figures[]): string =>
      f.map((g, i) => (g.rps / (runs.bare[i]?.rps ?? NaN)).toFixed(3)).join(', ');
    console.log(
      `the gateway's own cost: gateway/bare node proxy ${(viaGateway.rps / viaBare.rps).toFixed(3)} with a plain key ` +
        `(target >= 0.9; per round: ${ofBare(runs.gateway)}), ${(viaBudgeted.rps / viaBare.rps).toFixed(3)} with the budgeted key ` +
        `(target >= 0.85; per round: ${ofBare(runs.budgeted)}); CPU per call ${viaGateway.cpuUs.toFixed(1)} / ${viaBudgeted.cpuUs.toFixed(1)} µs ` +
        `against the bare proxy's ${viaBare.cpuUs.toFixed(1)}`,
    );
    console.log(
      `usage over time costs: gateway/gateway-with-totals-only ${(viaGateway.rps / viaPlain.rps).toFixed(3)} ` +
        `(target >= 0.95; per round: ${runs.gateway.map((g, i) => (g.rps / (runs.plain[i]?.rps ?? NaN)).toFixed(3)).join(', ')})`,
    );
    console.log(
      `ratios: gateway/nginx ${(viaGateway.rps / viaNginx.rps).toFixed(2)} (target >= 0.6; per round: ` +
        `${runs.gateway.map((g, i) => (g.rps / (runs.nginx[i]?.rps ?? NaN)).toFixed(2)).join(', ')}), ` +
        `gateway/direct ${(viaGateway.rps / direct.rps).toFixed(2)}, bare node proxy/nginx ${(viaBare.rps / viaNginx.rps).toFixed(2)} ` +
        `(CPU ${(viaBare.cpuUs / viaNginx.cpuUs).toFixed(2)}x), llhttp proxy/nginx ${(viaLean.rps / viaNginx.rps).toFixed(2)} ` +
        `(CPU ${(viaLean.cpuUs / viaNginx.cpuUs).toFixed(2)}x); ` +
        `CPU per request gateway/nginx ${(viaGateway.cpuUs / viaNginx.cpuUs).toFixed(2)} (target <= 2.5)`,
    );

    console.log("where a call's CPU goes, a plain key:");
    for (const line of await profiledCalls(dir, gatewayEnv(0), `/events/bda/${workflow}/svc/`, auth))
      console.log(line);
    console.log("where a call's CPU goes, a key with credits, two named limits and an identity's limit:");
    for (const line of await profiledCalls(
      dir,
      gatewayEnv(0),
      `/events/bda/${workflow}/svc/`,
      targets.budgeted.headers,
    ))
      console.log(line);
    console.log("where a decision's CPU goes (/auth/request, asked as nginx asks it, a plain key):");
    for (const line of await profiledCalls(dir, gatewayEnv(0), '/auth/request', {
      ...auth,
      'x-original-method': 'GET',
      'x-original-uri': `/events/bda/${workflow}/svc/`,
    }))
      console.log(line);

    for (const line of await tracingCost(
      dir,
      gatewayEnv,
      { url: gateway, pid: pid(gatewayProc) },
      `/events/bda/${workflow}/svc/`,
      auth,
      ROUNDS,
      WORKERS,
      median,
    ))
      console.log(line);

    // Worker scaling: the other worker count (2 when the run above used 1) of both, measured the
    // same way, so one run shows how each grows with processes.
    const otherWorkers = WORKERS === 1 ? 2 : 1;
    const otherNginxProc = startNginx(
      'nginx, other workers',
      join(dir, 'other'),
      otherNginxPort,
      otherWorkers,
    );
    const otherNginx = `http://127.0.0.1:${otherNginxPort}/`;
    await waitFor(otherNginx, auth);
    const otherGatewayProc = startGateway('gateway, other workers', otherGatewayPort, otherWorkers);
    const otherGateway = `http://127.0.0.1:${otherGatewayPort}/events/bda/${workflow}/svc/`;
    await waitFor(otherGateway, auth);
    const scaled: Record<'nginx' | 'gateway', Record<number, Figures>> = {
      nginx: { [WORKERS]: viaNginx },
      gateway: { [WORKERS]: viaGateway },
    };
    for (const [name, url, proc] of [
      ['nginx', otherNginx, otherNginxProc],
      ['gateway', otherGateway, otherGatewayProc],
    ] as const) {
      await warmUp(url, auth);
      const runs: Figures[] = [];
      for (let round = 0; round < ROUNDS; round++) runs.push(await load(url, auth, pid(proc)));
      scaled[name][otherWorkers] = median(runs);
    }
    console.log(
      `workers (median of ${ROUNDS} runs each; ${cpus().length} CPUs shared with wrk and the upstream):`,
    );
    for (const name of ['nginx', 'gateway'] as const) {
      const one = scaled[name][1] as Figures;
      const two = scaled[name][2] as Figures;
      console.log(
        `  ${name.padEnd(8)} 1 worker ${Math.round(one.rps).toString().padStart(7)} req/s   2 workers ${Math.round(
          two.rps,
        )
          .toString()
          .padStart(7)} req/s   x${(two.rps / one.rps).toFixed(2)}`,
      );
    }
    console.log(
      `  gateway/nginx with 1 worker each ${((scaled.gateway[1] as Figures).rps / (scaled.nginx[1] as Figures).rps).toFixed(2)}, ` +
        `with 2 each ${((scaled.gateway[2] as Figures).rps / (scaled.nginx[2] as Figures).rps).toFixed(2)}`,
    );
    await Promise.all([stop(otherNginxProc), stop(otherGatewayProc)]);

    console.log(
      `at a fixed 1,000 req/s (open loop, separate process, ${SECONDS} s after a 2 s warm-up; latency from hand-off to last byte):`,
    );
    const fixedNginx = await fixedRate(nginx, auth, 1000, nginxProc.pid as number);
    console.log(`  nginx + key check  ${fmtFixed(fixedNginx)}`);
    const fixedBare = await fixedRate(bare, {}, 1000, bareProc.pid as number);
    console.log(`  bare node proxy    ${fmtFixed(fixedBare)}`);
    // The plain key and the budgeted one in alternate rounds, each shown by its median p99 round:
    // one GC pause or noisy neighbour in a single 5 s round moves a p99 by several milliseconds.
    const fixedRuns: Record<'plain' | 'budgeted', FixedRate[]> = { plain: [], budgeted: [] };
    for (let round = 0; round < ROUNDS; round++) {
      fixedRuns.plain.push(await fixedRate(gateway, auth, 1000, gatewayProc.pid as number));
      fixedRuns.budgeted.push(
        await fixedRate(gateway, targets.budgeted.headers, 1000, gatewayProc.pid as number),
      );
    }
    const byP99 = (runs: FixedRate[]): FixedRate =>
      [...runs].sort((a, b) => a.p99 - b.p99)[Math.floor(runs.length / 2)] as FixedRate;
    const fixed = byP99(fixedRuns.plain);
    const fixedBudgeted = byP99(fixedRuns.budgeted);
    console.log(
      `  tollgate gateway   ${fmtFixed(fixed)}   p99 over the bare proxy's ${((fixed.p99 - fixedBare.p99) / 1000).toFixed(2)} ms (target < 1 ms)`,
    );
    console.log(
      `  gateway, credits + 2 limits + identity ${fmtFixed(fixedBudgeted)}   p99 added ${((fixedBudgeted.p99 - fixed.p99) / 1000).toFixed(2)} ms (target < 1 ms; ` +
        `p99 per round, plain/budgeted: ${fixedRuns.plain.map((p, i) => `${ms(p.p99).trim()}/${ms(fixedRuns.budgeted[i]?.p99 ?? NaN).trim()}`).join(', ')} ms)`,
    );

    const secondProc = startGateway('second gateway', secondPort, 1);
    await waitFor(`http://127.0.0.1:${secondPort}/events/bda/${workflow}/svc/`, auth);
    const samples = (await revocationLatency(redis, `http://127.0.0.1:${secondPort}`, workflow, 10)).sort(
      (a, b) => a - b,
    );
    console.log(
      `revocation seen by a second gateway process: median ${samples[Math.floor(samples.length / 2)]?.toFixed(1)} ms, ` +
        `max ${samples[samples.length - 1]?.toFixed(1)} ms over ${samples.length} keys (target < 10 ms)`,
    );
    const frozen = (
      await frozenWindow(redisUrl, `http://127.0.0.1:${secondPort}/events/bda/${workflow}/svc/`, key, 5)
    ).sort((a, b) => a - b);
    console.log(
      `Redis frozen (CLIENT PAUSE): cached keys passed for a median ${frozen[Math.floor(frozen.length / 2)]?.toFixed(0)} ms, ` +
        `max ${frozen.at(-1)?.toFixed(0)} ms over ${frozen.length} freezes, then 503 (bound: two heartbeats, 500 ms by default)`,
    );
    const cold = await firstCalls(redis, `http://127.0.0.1:${secondPort}`, workflow, 50);
    const seal = await sealCost(2000);
    console.log(
      `a key's first call (cache miss: Redis round trip + seal check): median ${cold.miss.toFixed(2)} ms; ` +
        `its next calls (cached): median ${cold.hit.toFixed(2)} ms; the seal check alone ${seal.open.toFixed(0)} µs ` +
        `(sealing an entry ${seal.seal.toFixed(0)} µs, paid by the writer)`,
    );
    redis.disconnect();
    await Promise.all([stop(secondProc), stop(gatewayProc)]);
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}
