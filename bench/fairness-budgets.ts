import { createServer, type IncomingMessage, type Server } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { generateKey, hashKey } from '../common/apikey/format.js';
import { KeyIndexWriter } from '../common/apikey/index-writer.js';
import { createLogger } from '../common/logger.js';
import { freePort } from '../common/net/free-port.js';
import { throwawayRedisArgs } from '../common/redis/throwaway-args.js';
import { redisKeys } from '../common/redis/schema.js';
import type { Route } from '../common/resources/grant.js';
import { RouteWriter } from '../common/routes/workflow-routes.js';
import { createManagement } from '../gateway/api/management.js';
import { LocalIssuer } from '../gateway/auth/local-issuer.js';
import { buildCentralGateway } from '../gateway/central-gateway.js';
import { loadGatewayConfig } from '../gateway/config.js';
import { DEFAULT_WEBHOOK_SETTINGS } from '../gateway/config/webhook-settings.js';
import type { BuiltCentralGateway } from '../gateway/central-gateway.js';
import type { SharedServices } from '../gateway/services.js';
import { noModels } from '../gateway/v2/model-directory.js';
import { WorkflowRoutes } from '../common/routes/workflow-routes.js';
import { scanningService } from '../test/integration/keys/scanner.js';
import { testSealer, TEST_SIGNING_KEY_FILE } from '../test/integration/signing.js';
import { serveIris, type LocalModels } from './local-models.js';
import { fixedRate, ms, ROOT, SECONDS, start, stop, TSX, waitForRedis, type FixedRate } from './support.js';

/**
 * The budgets off a call's path, in `make bench ARGS=fairness`: on one in-process central gateway
 * (real Redis, MLServer serving the iris example under five names, the management API with its
 * local issuer, the payload log in a folder), team A saturates one budget at a time from
 * 127.0.0.2 while team B uses it steadily from 127.0.0.1:
 * - logging models under load: team A's four models log every call, called 32 at a time;
 * - slow shadows: team A's four models copy every call to a shadow that never answers;
 * - webhook receivers that never answer: four users of team A, ten endpoints each, make and
 *   delete keys as fast as the API answers;
 * - slow report bodies: four addresses each hold two leak-report bodies of 1 MB, never finished.
 * Team B's figures: its calls' success and p99 beside its baseline from the same run, and what
 * it kept of the budget (its log records written, its shadow copies made, its webhook deliveries
 * within 10 s). The success bounds are held by the tests of each budget in `make test`.
 */
const RATE = 50;
const ATTACKER = '127.0.0.2';
const TEAM_A_MODELS = ['model-a1', 'model-a2', 'model-a3', 'model-a4'];
const TEAM_B_MODEL = 'model-b';
const NEIGHBOUR = join(ROOT, 'bench', 'neighbour.ts');

interface Row {
  name: string;
  calls: FixedRate;
  kept: string;
}

export async function runBudgets(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-fairness-'));
  const log = createLogger('bench', 'silent');
  const redisPort = await freePort();
  const redisServer = start('redis', 'redis-server', throwawayRedisArgs(redisPort));
  const hang = await hangingServer();
  const scanner = await scanningService();
  let models: LocalModels | undefined;
  let gateway: BuiltCentralGateway | undefined;
  let redis: Redis | undefined;
  try {
    const redisUrl = `redis://127.0.0.1:${redisPort}`;
    redis = new Redis(redisUrl, { retryStrategy: () => 100 });
    redis.on('error', () => undefined);
    await waitForRedis(redis);
    // Team B's model in a runtime of its own, as another team's would be.
    models = await serveIris(dir, [...TEAM_A_MODELS, TEAM_B_MODEL], log, [TEAM_B_MODEL]);
    const runtimeUrl = models.states.get(TEAM_B_MODEL)?.url ?? '';
    const sealer = await testSealer();
    const keys = { a: generateKey('platform'), b: generateKey('platform') };
    for (const [team, key] of Object.entries(keys))
      await new KeyIndexWriter(redis, sealer).put(hashKey(key), {
        id: `team${team}0123456789abcdef`.slice(0, 20),
        owner: `team-${team}`,
        module: 'platform',
        roles: ['models:inference'],
      });
    const routes = new RouteWriter(redis, sealer);
    const route = (team: string, name: string, extra: Partial<Route>): Route => ({
      url: models?.states.get(name)?.url ?? '',
      source: `model/${team}/${name}`,
      uid: `uid-${name}`,
      ...extra,
    });
    // Team B's model logs every call and copies each to a shadow that answers (its own runtime).
    await routes.put(
      redisKeys.modelRoute(TEAM_B_MODEL),
      route('team-b', TEAM_B_MODEL, {
        logging: { sampleRate: 1 },
        shadow: { name: 'shadow', url: runtimeUrl, percent: 100 },
      }),
    );
    const teamA = async (extra: Partial<Route>): Promise<void> => {
      for (const name of TEAM_A_MODELS)
        await routes.put(redisKeys.modelRoute(name), route('team-a', name, extra));
    };
    await teamA({});
    await redis.set(redisKeys.indexMarker, new Date().toISOString());

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const stateDir = join(dir, 'state');
    const config = loadGatewayConfig({
      env: {},
      overrides: {
        grantSigningKeyFile: TEST_SIGNING_KEY_FILE,
        host: '127.0.0.1',
        port,
        redisUrl,
        payloadLogUri: pathToFileURL(join(dir, 'payloads')).href,
        payloadLogIntervalMs: 1_000,
        // A megabyte between writes: team A's four models under load fill their quarter each second.
        payloadLogBufferBytes: 1 << 20,
        managementCallsPerSecond: 10_000,
      },
    });
    const management = ({ roles, audit, trust, proxies, shareRefused }: SharedServices) =>
      createManagement({
        trust,
        redis: redis as Redis,
        workflows: new WorkflowRoutes(redis as Redis, trust.verifier),
        log,
        roles,
        audit,
        maxRollGraceSeconds: config.maxRollGraceSeconds,
        maxKeysPerOwner: 10_000,
        managementCallsPerSecond: 10_000,
        keys: { stateDir },
        identity: { local: { stateDir, selfUrl: base } },
        admin: { groupsClaim: 'groups', adminGroups: ['tollgate-admins'] },
        leakReports: { keysUrl: scanner.keysUrl, action: 'report' },
        webhooks: {
          ...DEFAULT_WEBHOOK_SETTINGS,
          allowedCidrs: ['127.0.0.0/8'],
          allowHttp: true,
          pollMs: 200,
        },
        proxies,
        shareRefused,
      });
    gateway = await buildCentralGateway(config, log, { models: noModels, management });
    await gateway.listen(port, '127.0.0.1');
    for (let i = 0; i < 100 && !gateway.services.invalidation.live; i++)
      await new Promise((r) => setTimeout(r, 50));
    const registry = gateway.services.metrics.registry;
    const counter = async (name: string, labels: string): Promise<number> =>
      (await registry.metrics())
        .split('\n')
        .filter((l) => l.startsWith(`${name}{`) && labels.split(',').every((p) => l.includes(p)))
        .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);

    const body = readFileSync(join(dir, 'models', 'requests', 'model-iris.json'), 'utf8');
    const bAuth = { authorization: `Apikey ${keys.b}`, 'content-type': 'application/json' };
    const inferB = async (): Promise<{ calls: FixedRate; kept: string }> => {
      const model = `model="${TEAM_B_MODEL}"`;
      const before = {
        written: await counter('tollgate_payload_log_records_total', `${model},outcome="written"`),
        logDropped: await counter(
          'tollgate_payload_log_records_total',
          `${model},outcome="dropped_buffer_full"`,
        ),
        copied: await counter('tollgate_model_shadow_calls_total', model),
        copyDropped: await counter('tollgate_model_shadow_calls_total', `${model},outcome="dropped"`),
      };
      const calls = await fixedRate(
        `${base}/v2/models/${TEAM_B_MODEL}/infer`,
        bAuth,
        RATE,
        process.pid,
        body,
      );
      await gateway?.services.payloadLog?.flush();
      await new Promise((r) => setTimeout(r, 500));
      const written =
        (await counter('tollgate_payload_log_records_total', `${model},outcome="written"`)) - before.written;
      const logDropped =
        (await counter('tollgate_payload_log_records_total', `${model},outcome="dropped_buffer_full"`)) -
        before.logDropped;
      const copyDropped =
        (await counter('tollgate_model_shadow_calls_total', `${model},outcome="dropped"`)) -
        before.copyDropped;
      const copied =
        (await counter('tollgate_model_shadow_calls_total', model)) - before.copied - copyDropped;
      return {
        calls,
        kept: `log records written ${share(written, written + logDropped)}, shadow copies made ${share(copied, copied + copyDropped)}`,
      };
    };
    const attack = (spec: Record<string, unknown>) =>
      start('team A', process.execPath, [TSX, NEIGHBOUR, JSON.stringify(spec)], {}, () => undefined);
    const hold = async (spec: Record<string, unknown>, measure: () => Promise<Omit<Row, 'name'>>) => {
      const neighbour = attack(spec);
      try {
        await new Promise((r) => setTimeout(r, 3_000));
        return await measure();
      } finally {
        await stop(neighbour);
      }
    };
    const rows: Row[] = [];
    const paths = TEAM_A_MODELS.map((m) => `/v2/models/${m}/infer`);
    const inferSpec = { mode: 'infer', port, from: ATTACKER, paths, key: keys.a, body, concurrency: 32 };

    rows.push({ name: 'baseline (no neighbour): inference', ...(await inferB()) });
    await teamA({ logging: { sampleRate: 1 } });
    rows.push({ name: 'logging models under load', ...(await hold(inferSpec, inferB)) });
    await teamA({ shadow: { name: 'shadow', url: hang.url, percent: 100 } });
    rows.push({ name: 'slow shadows', ...(await hold(inferSpec, inferB)) });
    await teamA({});

    // Webhooks: team B's user makes a key every 100 ms; its endpoint hears of each.
    const issuer = await LocalIssuer.open(stateDir);
    const bToken = await issuer.mint('bob@team-b.example');
    const heard = new Map<string, number>();
    const receiver = await listening(
      createServer((req, res) => {
        void readAll(req).then((text) => {
          const id = (JSON.parse(text) as { data?: { keyId?: string } }).data?.keyId;
          if (id !== undefined && !heard.has(id)) heard.set(id, performance.now());
          res.end();
        });
      }),
    );
    const bearer = (token: string) => ({
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
    });
    const register = async (token: string, url: string) => {
      const res = await fetch(`${base}/api/v1/webhooks`, {
        method: 'POST',
        headers: bearer(token),
        body: JSON.stringify({ url, events: ['key.created'] }),
      });
      if (res.status !== 201) throw new Error(`webhook not registered: ${res.status} ${await res.text()}`);
    };
    await register(bToken, receiver.url);
    const deliveries = async (): Promise<Omit<Row, 'name'>> => {
      const made = new Map<string, number>();
      const latencies: number[] = [];
      let bad = 0;
      const end = performance.now() + SECONDS * 1000;
      while (performance.now() < end) {
        const started = performance.now();
        const res = await fetch(`${base}/api/v1/apikeys`, {
          method: 'POST',
          headers: bearer(bToken),
          body: JSON.stringify({ module: 'platform', roles: ['models:inference'], name: 'steady' }),
        });
        latencies.push((performance.now() - started) * 1000);
        const id = res.status === 201 ? (JSON.parse(await res.text()) as { id: string }).id : undefined;
        if (id === undefined) bad++;
        else made.set(id, performance.now());
        await new Promise((r) => setTimeout(r, 100));
      }
      await new Promise((r) => setTimeout(r, 10_000));
      const waits = [...made].map(([id, at]) => (heard.get(id) ?? Infinity) - at).sort((x, y) => x - y);
      const inTime = waits.filter((w) => w <= 10_000).length;
      return {
        calls: summary(latencies, bad),
        kept: `deliveries within 10 s ${share(inTime, waits.length)}, delivery p99 ${(percentile(waits, 99) / 1000).toFixed(2)} s`,
      };
    };
    rows.push({ name: 'baseline (no neighbour): key events', ...(await deliveries()) });
    const tokens = await Promise.all(
      ['mallory', 'oscar', 'trudy', 'eve'].map((u) => issuer.mint(`${u}@team-a.example`)),
    );
    for (const token of tokens) for (let i = 0; i < 10; i++) await register(token, `${hang.url}/hook-${i}`);
    rows.push({
      name: 'webhook receivers that never answer',
      ...(await hold({ mode: 'keys', port, from: ATTACKER, tokens }, deliveries)),
    });

    // Leak reports: the scanning service sends a signed report RATE times a second.
    const report = JSON.stringify([
      { token: 'tgp_not_a_key', type: 'tollgate', url: 'https://x', source: 'content' },
    ]);
    const reportHeaders = {
      'content-type': 'application/json',
      'github-public-key-identifier': scanner.keyId,
      'github-public-key-signature': scanner.sign(Buffer.from(report)),
    };
    const reports = async (): Promise<Omit<Row, 'name'>> => ({
      calls: await fixedRate(`${base}/api/v1/leaked-keys`, reportHeaders, RATE, process.pid, report),
      kept: '',
    });
    rows.push({ name: 'baseline (no neighbour): leak reports', ...(await reports()) });
    rows.push({
      name: 'slow report bodies (4 addresses)',
      ...(await hold(
        {
          mode: 'slow-reports',
          port,
          from: ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'],
          perAddress: 2,
          bytes: 1_000_000,
        },
        reports,
      )),
    });

    const lines = [`team B from 127.0.0.1, team A from ${ATTACKER} (its reports from 127.0.0.2-5)`];
    let baseline: FixedRate | undefined;
    for (const row of rows) {
      if (row.name.startsWith('baseline')) baseline = row.calls;
      const ratio =
        baseline === undefined || row.calls === baseline
          ? ''
          : `   x${(row.calls.p99 / baseline.p99).toFixed(2)} of baseline`;
      lines.push(
        `  ${row.name.padEnd(44)} success ${pct(row.calls)}   p99 ${ms(row.calls.p99)} ms${ratio}${row.kept === '' ? '' : `   ${row.kept}`}`,
      );
    }
    receiver.server.close();
    return lines;
  } finally {
    await gateway?.shutdown();
    await models?.stop();
    redis?.disconnect();
    await stop(redisServer);
    hang.close();
    await scanner.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const pct = (f: FixedRate): string =>
  `${(((f.requests - f.bad) / Math.max(1, f.requests)) * 100).toFixed(2).padStart(6)}%`;

const share = (n: number, of: number): string =>
  of === 0 ? 'none offered' : `${n}/${of} (${((n / of) * 100).toFixed(1)}%)`;

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/** Latencies in microseconds, as fixedRate reports them. */
function summary(latencies: number[], bad: number): FixedRate {
  const sorted = [...latencies].sort((x, y) => x - y);
  return {
    requests: sorted.length,
    bad,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? NaN,
    lagP99: 0,
    cpuUsPerRequest: NaN,
  };
}

function readAll(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => resolve(text));
  });
}

async function listening(server: Server): Promise<{ server: Server; url: string }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A server that takes every request and never answers (a shadow or a webhook receiver that hangs). */
async function hangingServer(): Promise<{ url: string; close: () => void }> {
  const sockets: Socket[] = [];
  const server = createServer((req) => req.resume());
  server.on('connection', (s: Socket) => sockets.push(s));
  const { url } = await listening(server);
  return {
    url,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
