import { CoordinationV1Api, KubeConfig } from '@kubernetes/client-node';
import type { OperatorManager } from '../../../operator/manager.js';
import { openKeyFile } from '../../../common/crypto/key-file.js';
import { redis } from '../../harness/index.js';
import { TEST_SIGNING_KEY_FILE } from '../signing.js';
import {
  cluster,
  type Cluster,
  createModel,
  eventually,
  getModel,
  modelFolder,
  namespace,
  npSettings,
  removeModelFolders,
  startOperator,
} from './support.js';

afterAll(removeModelFolders);

const reconciles = async (op: OperatorManager) =>
  ((await op.metrics.reconciles.get()).values as Array<{ value: number }>).reduce((n, v) => n + v.value, 0);

describe('two operator replicas with leader election', () => {
  let c: Cluster;
  let ns: string;
  let a: OperatorManager;
  let b: OperatorManager;

  beforeAll(async () => {
    c = await cluster();
    ns = await namespace(c, 'op-leader');
    const redisUrl = (await redis('operator-leader')).url;
    const replica = (identity: string) =>
      startOperator(c, ns, redisUrl, {
        leaderElection: {
          kc: c.kc,
          options: {
            namespace: ns,
            name: 'tollgate-operator',
            identity,
            leaseDurationSeconds: 3,
            retryPeriodMs: 250,
          },
        },
      });
    a = replica('replica-a');
    await a.start();
    await eventually(async () => a.isRunning, 'replica a leading');
    b = replica('replica-b');
    await b.start();
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    c?.kc.close();
  });

  test('only the Lease holder reconciles; when it stops, the other takes over', async () => {
    const dir = await modelFolder({ 'model-settings.json': npSettings('model-one'), 'model.joblib': 'x' });
    await createModel(c, ns, 'model-one', { storageUri: `file://${dir}` });
    await eventually(
      async () => (await getModel(c, ns, 'model-one'))?.status?.phase === 'Loading',
      'model-one reconciled',
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(a.isRunning).toBe(true);
    expect(b.isRunning).toBe(false);
    expect(await reconciles(a)).toBeGreaterThan(0);
    expect(await reconciles(b)).toBe(0);
    const lease = await c.kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace: ns, name: 'tollgate-operator' });
    expect(lease.spec?.holderIdentity).toBe('replica-a');

    // The leader leaves (releasing the Lease); the other replica leads and reconciles new work.
    await a.stop();
    await eventually(async () => b.isRunning, 'replica b leading', 10_000);
    const dir2 = await modelFolder({ 'model-settings.json': npSettings('model-two'), 'model.joblib': 'x' });
    await createModel(c, ns, 'model-two', { storageUri: `file://${dir2}` });
    await eventually(
      async () => (await getModel(c, ns, 'model-two'))?.status?.phase === 'Loading',
      'model-two reconciled by b',
    );
    expect(await reconciles(b)).toBeGreaterThan(0);
    const after = await c.kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace: ns, name: 'tollgate-operator' });
    expect(after.spec?.holderIdentity).toBe('replica-b');
    expect(after.spec?.leaseTransitions).toBe(1);
  });
});

describe('leader election with clocks that disagree', () => {
  let c: Cluster;
  let ns: string;
  const replicas: OperatorManager[] = [];

  beforeAll(async () => {
    c = await cluster();
    ns = await namespace(c, 'op-skew');
  });
  afterAll(async () => {
    for (const r of replicas) await r.stop();
    c?.kc.close();
  });

  test('a leader whose clock is two minutes behind keeps the Lease; the other never leads beside it', async () => {
    const redisUrl = (await redis('operator-skew')).url;
    const replica = (identity: string, skewMs: number) => {
      const r = startOperator(c, ns, redisUrl, {
        leaderElection: {
          kc: c.kc,
          options: {
            namespace: ns,
            name: 'tollgate-operator',
            identity,
            leaseDurationSeconds: 2,
            retryPeriodMs: 200,
            wallClock: () => new Date(Date.now() + skewMs),
          },
        },
      });
      replicas.push(r);
      return r;
    };
    // Its renewTime is always two minutes old by the other's clock: read as a wall-clock age, the
    // Lease would look expired at every look.
    const behind = replica('clock-behind', -120_000);
    await behind.start();
    await eventually(async () => behind.isRunning, 'the replica with the slow clock leading');
    const ahead = replica('clock-ahead', 0);
    await ahead.start();
    const deadline = Date.now() + 6_000;
    while (Date.now() < deadline) {
      expect([behind.isRunning, ahead.isRunning]).toEqual([true, false]);
      await new Promise((r) => setTimeout(r, 100));
    }
    // It leaves: the other takes over once it has seen the Lease stand still for a lease duration.
    await behind.stop();
    await eventually(async () => ahead.isRunning, 'the other replica leading', 10_000);
  });
});

describe('a leader whose controllers cannot start', () => {
  let c: Cluster;
  let ns: string;
  let op: OperatorManager | undefined;

  beforeAll(async () => {
    c = await cluster();
    ns = await namespace(c, 'op-term-retry');
  });
  afterAll(async () => {
    await op?.stop();
    c?.kc.close();
  });

  test('tries again while it holds the Lease, and reconciles once the signing key can be read', async () => {
    const redisUrl = (await redis('operator-term-retry')).url;
    let reads = 0;
    op = startOperator(c, ns, redisUrl, {
      signingKey: async () => {
        reads += 1;
        if (reads <= 2) throw new Error('secret "tollgate-signing-key" not found');
        return openKeyFile(TEST_SIGNING_KEY_FILE);
      },
      leaderElection: {
        kc: c.kc,
        options: { namespace: ns, name: 'tollgate-operator', identity: 'only', retryPeriodMs: 250 },
      },
    });
    await op.start();
    await eventually(async () => op?.isRunning, 'controllers started after two failed reads', 15_000);
    expect(reads).toBe(3);
    expect((await op.metrics.termStartFailures.get()).values[0]?.value).toBe(2);
    const dir = await modelFolder({ 'model-settings.json': npSettings('model-late'), 'model.joblib': 'x' });
    await createModel(c, ns, 'model-late', { storageUri: `file://${dir}` });
    await eventually(
      async () => (await getModel(c, ns, 'model-late'))?.status?.phase === 'Loading',
      'model-late reconciled',
    );
  });

  test('a term whose caches cannot sync is given up after the sync timeout and tried again; the replica still stops', async () => {
    // The caches list as a user with no rights at all: every list is refused, so none ever syncs.
    const nobody = new KubeConfig();
    nobody.loadFromOptions({
      clusters: c.kc.clusters,
      contexts: c.kc.contexts,
      currentContext: c.kc.currentContext,
      users: c.kc.users.map((u) => ({ ...u, impersonateUser: 'tollgate-test-nobody' })),
    });
    const redisUrl = (await redis('operator-no-sync')).url;
    const stuck = startOperator(
      c,
      ns,
      redisUrl,
      {
        cacheSyncTimeoutMs: 1_000,
        leaderElection: {
          kc: c.kc,
          options: {
            namespace: ns,
            name: 'tollgate-operator-no-sync',
            identity: 'stuck',
            retryPeriodMs: 250,
          },
        },
      },
      nobody,
    );
    await stuck.start();
    await eventually(
      async () => ((await stuck.metrics.termStartFailures.get()).values[0]?.value ?? 0) >= 2,
      'two starts given up',
      15_000,
    );
    expect(stuck.isRunning).toBe(false);
    // Stopped while a start waits on its caches: the start is cut, not waited out (the caches never
    // sync here, so a stop that waited would outlast the test), and nothing runs after.
    await stuck.stop();
    expect(stuck.isRunning).toBe(false);
  });
});
