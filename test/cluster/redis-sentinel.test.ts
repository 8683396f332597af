// The chart's high-availability Redis on a real node: `redis.sentinel.enabled=true` runs a
// primary, two replicas and three Sentinels (a StatefulSet of Redis + Sentinel pods), and the
// gateways and the operator follow the Sentinels. Under a steady stream of calls through the
// gateway Service, the primary's pod is killed: the outage is a short run of 503s, every key and
// route is still there after it, and keys deleted before, during and after the failover are
// refused by every gateway pod. A replica's pod killed is not seen at all.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  call,
  createKey,
  echoWorkflowService,
  eventually,
  installTollgate,
  NAMESPACE,
  readyPodIps,
  RELEASE,
  type Installed,
} from './support.js';

const NS = 'ha-team';
const WORKFLOW = 'ledger';
const SET = `${RELEASE}-redis`;
const HEADLESS = `${SET}-headless`;
const member = (i: number): string => `${SET}-${i}`;
const fqdn = (pod: string): string => `${pod}.${HEADLESS}.${NAMESPACE}.svc.cluster.local`;
const path = `/events/bda/${WORKFLOW}/echo/balance`;

let t: Installed;
let bda: { id: string; key: string };
const figures: string[] = [];
// Loads still running when a test fails before stopping its own: stopped in afterAll, or Jest
// would never exit (their loops keep calling).
const running = new Set<() => Promise<unknown>>();

async function inPod(pod: string, container: string, ...command: string[]): Promise<string> {
  if (command[0] === 'redis-cli') {
    // Every node and Sentinel asks for a password: the operator's user on a node, the clients' user
    // on a Sentinel, each read from the pod's own environment (never on the command line).
    const [user, variable] =
      container === 'sentinel'
        ? ['tollgate-client', 'PASSWORD_sentinel_client']
        : ['tollgate-operator', 'PASSWORD_operator'];
    const args = command
      .slice(1)
      .map((a) => `'${a}'`)
      .join(' ');
    command = ['sh', '-c', `REDISCLI_AUTH="$${variable}" redis-cli --no-auth-warning --user ${user} ${args}`];
  }
  return t.kubectl('-n', NAMESPACE, 'exec', pod, '-c', container, '--', ...command);
}

/** The primary's pod, as the Sentinel of `askPod` names it. */
async function primaryPod(askPod: string): Promise<string> {
  const out = await inPod(
    askPod,
    'sentinel',
    'redis-cli',
    '-p',
    '26379',
    '--raw',
    'sentinel',
    'get-master-addr-by-name',
    'tollgate',
  );
  return out.trim().split('\n')[0]!.split('.')[0]!;
}

const callWith = (key: string, base = t.gateway) =>
  call(`${base}${path}`, { headers: { authorization: `Apikey ${key}` } });

/** Four clients calling the gateway Service until stopped; each answer with when it came. */
function steadyCalls(key: string): {
  stop: () => Promise<Array<{ at: number; status: number; code: string }>>;
} {
  const seen: Array<{ at: number; status: number; code: string }> = [];
  let calling = true;
  const worker = async (): Promise<void> => {
    while (calling) {
      const r = await callWith(key).catch((e: unknown) => ({
        status: 0,
        body: { code: e instanceof Error ? e.message : String(e) },
      }));
      seen.push({ at: Date.now(), status: r.status, code: String(r.body['code'] ?? '') });
      await sleep(20);
    }
  };
  const workers = Promise.all([worker(), worker(), worker(), worker()]);
  const stop = async (): Promise<Array<{ at: number; status: number; code: string }>> => {
    calling = false;
    running.delete(stop);
    await workers;
    return seen;
  };
  running.add(stop);
  return { stop };
}

/** Each kind of refusal: how many, and from when to when after the kill. */
function timeline(failures: Array<{ at: number; status: number; code: string }>, from: number): string {
  const kinds = new Map<string, { n: number; first: number; last: number }>();
  for (const f of failures) {
    const k = `${f.status} ${f.code}`;
    const seen = kinds.get(k) ?? { n: 0, first: f.at, last: f.at };
    kinds.set(k, { n: seen.n + 1, first: seen.first, last: f.at });
  }
  const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  return (
    [...kinds].map(([k, v]) => `${k} ×${v.n} (${s(v.first - from)}–${s(v.last - from)})`).join(', ') || 'none'
  );
}

/** What the gateway pods logged of failed calls in the last two minutes. */
async function gatewayFailureLogs(): Promise<string> {
  const out = await t
    .kubectl(
      '-n',
      NAMESPACE,
      'logs',
      '-l',
      'app.kubernetes.io/component=gateway',
      '--since=2m',
      '--tail=2000',
    )
    .catch((e: unknown) => String(e));
  return out
    .split('\n')
    .filter((l) => /"level":(40|50)/.test(l))
    .slice(-20)
    .join('\n');
}

/** The primary once all three Sentinels name it and it has both replicas. */
async function settledPrimary(): Promise<string> {
  return eventually(
    'a settled set: one primary named by every Sentinel, with two replicas',
    async () => {
      const named = new Set(await Promise.all([0, 1, 2].map((i) => primaryPod(member(i)))));
      if (named.size !== 1) return undefined;
      const [primary] = [...named];
      const info = await inPod(primary!, 'redis', 'redis-cli', 'info', 'replication');
      return /role:master/.test(info) && /connected_slaves:2/.test(info) ? primary : undefined;
    },
    120_000,
    1_000,
  );
}

async function deleteKey(id: string): Promise<void> {
  // A client deleting during the failover retries a refusal, as it would any 503.
  await eventually(
    `delete key ${id}`,
    async () => {
      const r = await call(`${t.gateway}/api/v1/apikeys/${id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${await t.token('alice')}` },
      });
      if (r.status === 204 || r.status === 404) return true;
      // Said in the failure if it never passes: what the gateway answered last.
      throw new Error(`answered ${r.status} ${String(r.body['code'])}`);
    },
    // As long as the promotion may take (below): a delete needs the new primary.
    60_000,
    200,
  );
}

/** Every gateway pod refuses `key` as unknown. */
async function refusedEverywhere(key: string): Promise<void> {
  for (const ip of await readyPodIps(t, NAMESPACE, 'app.kubernetes.io/component=gateway')) {
    const r = await callWith(key, `http://${ip}:8080`);
    expect([ip, r.status, r.body['code']]).toEqual([ip, 401, 'unknown_api_key']);
  }
}

beforeAll(async () => {
  t = await installTollgate(['redis.sentinel.enabled=true']);
  await t.kubectl('create', 'namespace', NS);
  await echoWorkflowService(t, NS, 'echo', { workflow: WORKFLOW, service: 'echo', owner: 'alice' });
  bda = await createKey(t, 'alice', { module: 'bda', roles: [WORKFLOW] });
  await eventually('the workflow route', async () =>
    (await callWith(bda.key)).status === 200 ? true : undefined,
  );
}, 900_000);

afterAll(async () => {
  await Promise.all([...running].map((stop) => stop()));
  await t?.cleanup(NS);
  process.stderr.write(`redis sentinel on the cluster:\n  ${figures.join('\n  ')}\n`);
});

describe('the chart’s Redis with Sentinels', () => {
  it('runs a primary, two replicas and three Sentinels that agree on it, and the gateway follows them', async () => {
    const [first, second, third] = [member(0), member(1), member(2)];
    // Nobody gets in without a password, and the clients' Sentinel user can only find the primary.
    expect(await inPod(first!, 'redis', 'sh', '-c', 'redis-cli get tg:index:built')).toMatch(/NOAUTH/);
    expect(await inPod(first!, 'sentinel', 'sh', '-c', 'redis-cli -p 26379 ping')).toMatch(/NOAUTH/);
    expect(
      await inPod(first!, 'sentinel', 'redis-cli', '-p', '26379', 'sentinel', 'failover', 'tollgate'),
    ).toMatch(/NOPERM/);
    const replication = await inPod(first!, 'redis', 'redis-cli', 'info', 'replication');
    expect(replication).toMatch(/role:master/);
    expect(replication).toMatch(/connected_slaves:2/);
    for (const pod of [second!, third!]) {
      const info = await inPod(pod, 'redis', 'redis-cli', 'info', 'replication');
      expect(info).toMatch(/role:slave/);
      expect(info).toContain(`master_host:${fqdn(first!)}`);
    }
    for (const pod of [first!, second!, third!]) {
      expect(await primaryPod(pod)).toBe(first);
      const known = await inPod(
        pod,
        'sentinel',
        'redis-cli',
        '-p',
        '26379',
        'sentinel',
        'sentinels',
        'tollgate',
      );
      // The two other Sentinels, each by its pod's name.
      for (const other of [first!, second!, third!].filter((p) => p !== pod))
        expect(known).toContain(fqdn(other));
    }
    const url = JSON.parse(
      await t.kubectl(
        '-n',
        NAMESPACE,
        'get',
        'deploy',
        `${RELEASE}-gateway`,
        '-o',
        'jsonpath={.spec.template.spec.containers[0].env}',
      ),
    ) as Array<{ name: string; value?: string }>;
    // As the gateway's own user; the passwords are filled in by Kubernetes, never written here.
    expect(url.find((e) => e.name === 'TOLLGATE_REDIS_URL')?.value).toBe(
      `redis+sentinel://tollgate-gateway:$(TOLLGATE_REDIS_PASSWORD)@${[0, 1, 2]
        .map((i) => `${fqdn(member(i))}:26379`)
        .join(
          ',',
        )}/tollgate?sentinelUsername=tollgate-client&sentinelPassword=$(TOLLGATE_REDIS_SENTINEL_PASSWORD)`,
    );
    expect((await callWith(bda.key)).body['path']).toBe('/balance');
  });

  it('the primary’s pod killed under load: a short run of 503s, nothing lost, deleted keys refused everywhere', async () => {
    const before = await createKey(t, 'alice', { module: 'bda', roles: [WORKFLOW] });
    const during = await createKey(t, 'alice', { module: 'bda', roles: [WORKFLOW] });
    const after = await createKey(t, 'alice', { module: 'bda', roles: [WORKFLOW] });
    for (const k of [before, during, after]) expect((await callWith(k.key)).status).toBe(200);
    const primary = await settledPrimary();
    const survivor = [member(0), member(1), member(2)].find((p) => p !== primary)!;

    const load = steadyCalls(bda.key);
    await sleep(1_000);
    await deleteKey(before.id);
    const killedAt = Date.now();
    // Not a graceful shutdown: the pod is gone at once, as on a lost node.
    await t.kubectl('-n', NAMESPACE, 'delete', 'pod', primary, '--grace-period=0', '--force');
    await deleteKey(during.id);
    const promoted = await eventually(
      'a replica promoted',
      async () => {
        const now = await primaryPod(survivor);
        return now !== primary ? now : undefined;
      },
      60_000,
      250,
    );
    const promotedMs = Date.now() - killedAt;
    await eventually(
      'calls answered again',
      async () => ((await callWith(bda.key)).status === 200 ? true : undefined),
      60_000,
      100,
    );
    // The run of 503s is printed with the figures, not bounded here: it is Sentinel's own steps
    // (down-after, a random delay, the promotion) on a loaded node.
    const backAt = Date.now();
    await deleteKey(after.id);
    await sleep(3_000);
    const seen = await load.stop();

    const failures = seen.filter((s) => s.status !== 200);
    // The outage as callers saw it: from the first refused call to the last. (From the kill it is
    // longer by however long the kubelet takes to stop the container.)
    const outageMs = failures.length === 0 ? 0 : failures.at(-1)!.at - failures[0]!.at;
    const lastMs = failures.length === 0 ? 0 : failures.at(-1)!.at - killedAt;
    figures.push(
      `primary ${primary} killed: ${promoted} promoted after ${(promotedMs / 1000).toFixed(1)} s; ` +
        `${failures.length} of ${seen.length} calls refused over ${(outageMs / 1000).toFixed(1)} s, ` +
        `the last ${(lastMs / 1000).toFixed(1)} s after the kill`,
    );
    // Fail closed, saying "retry": never a 401 or 404 that would make a client drop its key.
    const kinds = new Set(failures.map((f) => `${f.status} ${f.code}`));
    figures.push(`  refusals by kind: ${timeline(failures, killedAt)}`);
    if ([...kinds].some((k) => !/^503 (redis_unavailable|index_rebuilding)$/.test(k)))
      figures.push(`  the gateways' logs of it:\n${await gatewayFailureLogs()}`);
    for (const k of kinds) expect(k).toMatch(/^503 (redis_unavailable|index_rebuilding)$/);
    // Once answered again, answered for good.
    const sinceBack = seen.filter((s) => s.at > backAt + 1_000);
    expect(sinceBack.map((s) => s.status)).toEqual(sinceBack.map(() => 200));
    // Nothing lost: the key and the route from before the kill work on every gateway pod.
    for (const ip of await readyPodIps(t, NAMESPACE, 'app.kubernetes.io/component=gateway')) {
      expect((await callWith(bda.key, `http://${ip}:8080`)).body['path']).toBe('/balance');
    }
    // Deleted before, during and after the failover: refused by every gateway pod.
    for (const k of [before, during, after]) await refusedEverywhere(k.key);

    // The killed member comes back as a replica of the new primary, under its old name.
    await eventually(
      `${primary} back as a replica`,
      async () => {
        const info = await inPod(primary, 'redis', 'redis-cli', 'info', 'replication');
        return info.includes('role:slave') && info.includes(`master_host:${fqdn(promoted)}`)
          ? true
          : undefined;
      },
      120_000,
      1_000,
    );
    await eventually(
      'the new primary with two replicas',
      async () =>
        /connected_slaves:2/.test(await inPod(promoted, 'redis', 'redis-cli', 'info', 'replication'))
          ? true
          : undefined,
      60_000,
      1_000,
    );
  });

  it('a replica’s pod killed under load: no call fails', async () => {
    // Whatever the test before left (a member still rejoining), start from a settled set.
    const primary = await settledPrimary();
    const replica = [member(0), member(1), member(2)].find((p) => p !== primary)!;
    const load = steadyCalls(bda.key);
    await sleep(1_000);
    await t.kubectl('-n', NAMESPACE, 'delete', 'pod', replica, '--grace-period=0', '--force');
    await sleep(5_000);
    const seen = await load.stop();
    figures.push(
      `replica ${replica} killed: ${seen.filter((s) => s.status !== 200).length} of ${seen.length} calls refused`,
    );
    expect(seen.length).toBeGreaterThan(50);
    expect(seen.filter((s) => s.status !== 200)).toEqual([]);
  });
});
