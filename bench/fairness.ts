import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { generateKey, hashKey } from '../common/apikey/format.js';
import { KeyIndexWriter } from '../common/apikey/index-writer.js';
import { freePort } from '../common/net/free-port.js';
import { throwawayRedisArgs } from '../common/redis/throwaway-args.js';
import { redisKeys } from '../common/redis/schema.js';
import { RouteWriter } from '../common/routes/workflow-routes.js';
import { testSealer, TEST_SIGNING_KEY_FILE } from '../test/integration/signing.js';
import { CLI, fixedRate, ms, start, stopAll, waitFor, waitForRedis, type FixedRate } from './support.js';
import { runBudgets } from './fairness-budgets.js';

/**
 * `make bench ARGS=fairness`: a noisy neighbour against a steady caller, on the real gateway and
 * Redis. Team B calls its workflow at a fixed rate from 127.0.0.1; team A (its own key, owner and
 * workflow, from 127.0.0.2) saturates one resource at a time: idle keep-alive connections, calls
 * held by an upstream that never answers, bodies that never finish. Printed per resource: team B's
 * success and its p99 beside its baseline from the same run. The attacker's load shares the two
 * cores with everything else, so the ratio is reported, not bounded; the success bounds are held
 * by test/integration/gateway/fair-shares.test.ts in `make test`.
 */
const RATE = 200;
const ATTACKER = '127.0.0.2';

/** A script run as its own process: `n` connections from ATTACKER, each doing `what`, held open. */
const ATTACK = `
const net = require('node:net');
const [port, n, what, key] = process.argv.slice(1);
const sockets = [];
let opened = 0;
function open() {
  if (opened >= Number(n)) { console.log('held'); return; }
  opened++;
  const s = net.connect({ port: Number(port), host: '127.0.0.1', localAddress: '${ATTACKER}' });
  s.on('error', () => undefined);
  s.on('data', () => undefined);
  s.on('connect', () => {
    if (what === 'idle') s.write('GET /v2/health/live HTTP/1.1\\r\\nHost: gw\\r\\n\\r\\n');
    else if (what === 'held') s.write('GET /events/bda/team-a/svc/hang HTTP/1.1\\r\\nHost: gw\\r\\nAuthorization: Apikey ' + key + '\\r\\n\\r\\n');
    else s.write('POST /events/bda/team-a/svc/upload HTTP/1.1\\r\\nHost: gw\\r\\nAuthorization: Apikey ' + key + '\\r\\nContent-Length: 1000000\\r\\n\\r\\nx');
    setImmediate(open);
  });
  sockets.push(s);
}
open();
setInterval(() => undefined, 1 << 30);
`;

interface Scenario {
  name: string;
  what: 'idle' | 'held' | 'body';
  connections: number;
}

const SCENARIOS: Scenario[] = [
  { name: 'idle keep-alive connections (one address)', what: 'idle', connections: 6_000 },
  { name: 'calls held by an upstream that never answers', what: 'held', connections: 2_000 },
  { name: 'bodies that never finish', what: 'body', connections: 2_000 },
];

export async function run(): Promise<void> {
  const [redisPort, gatewayPort, fastPort, hangPort] = await Promise.all(
    Array.from({ length: 4 }, () => freePort()),
  );
  const held: Array<() => void> = [];
  try {
    start('redis', 'redis-server', throwawayRedisArgs(redisPort as number));
    // Team B's service answers; team A's never does (its calls are held until the bench ends).
    const upstream = (port: number, hang: boolean) =>
      start(`upstream ${port}`, process.execPath, [
        '-e',
        `require('node:http').createServer((req, res) => { req.resume(); ${hang ? '' : "res.end('ok');"} }).listen(${port}, '127.0.0.1');`,
      ]);
    upstream(fastPort as number, false);
    upstream(hangPort as number, true);
    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    const redis = new Redis(redisUrl, { lazyConnect: false, retryStrategy: () => 100 });
    // Refused until redis-server listens: waitForRedis asks again.
    redis.on('error', () => undefined);
    await waitForRedis(redis);
    const sealer = await testSealer();
    const keys: Record<string, string> = {};
    for (const team of ['team-a', 'team-b']) {
      keys[team] = generateKey('bda');
      await new KeyIndexWriter(redis, sealer).put(hashKey(keys[team]), {
        id: `${team.replace('-', '')}0123456789abcd`.slice(0, 20),
        owner: team,
        module: 'bda',
        roles: [team],
      });
      await new RouteWriter(redis, sealer).put(redisKeys.bdaRoute(team, 'svc'), {
        url: `http://127.0.0.1:${team === 'team-a' ? hangPort : fastPort}`,
        owner: team,
        workflow: team,
      });
    }
    await redis.set(redisKeys.indexMarker, new Date().toISOString());
    const gateway = start('gateway', process.execPath, [CLI, 'gateway'], {
      NODE_OPTIONS: '',
      LOG_LEVEL: 'warn',
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_PORT: String(gatewayPort),
      TOLLGATE_REDIS_URL: redisUrl,
      TOLLGATE_GRANT_SIGNING_KEY_FILE: TEST_SIGNING_KEY_FILE,
      // Bodies that never finish are cut at this time: longer than a measurement.
      TOLLGATE_REQUEST_BODY_TIMEOUT_MS: '60000',
    });
    const victim = `http://127.0.0.1:${gatewayPort}/events/bda/team-b/svc/ping`;
    const auth = { authorization: `Apikey ${keys['team-b'] ?? ''}` };
    await waitFor(victim, auth);
    const pid = gateway.pid ?? 0;
    const baseline = await fixedRate(victim, auth, RATE, pid);
    const rows: Array<[string, FixedRate, string]> = [];
    for (const scenario of SCENARIOS) {
      const attack = start(
        `attacker (${scenario.what})`,
        process.execPath,
        [
          '-e',
          ATTACK,
          String(gatewayPort),
          String(scenario.connections),
          scenario.what,
          keys['team-a'] ?? '',
        ],
        {},
        () => undefined,
      );
      held.push(() => attack.kill('SIGKILL'));
      // Let the attacker open what it can (the gateway refuses the rest as they come).
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      const refused = await attackerAnswer(gatewayPort as number, scenario.what, keys['team-a'] ?? '');
      rows.push([scenario.name, await fixedRate(victim, auth, RATE, pid), refused]);
      attack.kill('SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
    console.log(
      `team B at ${RATE} req/s from 127.0.0.1, team A from ${ATTACKER}; p99 beside team B's baseline from this run`,
    );
    console.log(
      `  ${'baseline (no neighbour)'.padEnd(48)} success ${pct(baseline)}   p99 ${ms(baseline.p99)} ms`,
    );
    for (const [name, f, refused] of rows) {
      console.log(
        `  ${name.padEnd(48)} success ${pct(f)}   p99 ${ms(f.p99)} ms   x${(f.p99 / baseline.p99).toFixed(2)} of baseline   team A's next call: ${refused}`,
      );
    }
    redis.disconnect();
  } finally {
    for (const kill of held) kill();
    await stopAll();
  }
  console.log(
    '\nthe budgets off the call path (one in-process central gateway, MLServer, the management API)',
  );
  for (const line of await runBudgets()) console.log(line);
}

const pct = (f: FixedRate): string =>
  `${(((f.requests - f.bad) / Math.max(1, f.requests)) * 100).toFixed(2).padStart(6)}%`;

/** What team A's next call of the same kind is answered, while its load is held. */
function attackerAnswer(port: number, what: Scenario['what'], key: string): Promise<string> {
  if (what === 'idle') {
    return new Promise((resolve) => {
      const s: Socket = connect({ port, host: '127.0.0.1', localAddress: ATTACKER });
      s.on('error', () => resolve('connection refused'));
      s.on('close', () => resolve('connection closed as it came'));
      s.on('connect', () => {
        s.write('GET /v2/health/live HTTP/1.1\r\nHost: gw\r\n\r\n');
        s.once('data', (d: Buffer) => {
          resolve(d.toString().split('\r\n')[0] ?? '');
          s.destroy();
        });
      });
    });
  }
  const agent = new HttpAgent({ localAddress: '127.0.0.3' });
  return new Promise((resolve) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        agent,
        path: '/events/bda/team-a/svc/hang',
        headers: { authorization: `Apikey ${key}` },
        timeout: 3_000,
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          const code = /"code":"([a-z_]+)"/.exec(text)?.[1] ?? '';
          resolve(`${res.statusCode ?? 0} ${code}`);
          agent.destroy();
        });
      },
    );
    req.on('timeout', () => {
      resolve('held (no answer in 3 s)');
      req.destroy();
      agent.destroy();
    });
    req.on('error', () => undefined);
    req.end();
  });
}
