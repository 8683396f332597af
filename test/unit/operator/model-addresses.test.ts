import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Route } from '../../../common/resources/grant.js';
import type { Model } from '../../../common/resources/model.js';
import type { Workflow } from '../../../common/resources/workflow.js';
import { createLogger } from '../../../common/logger.js';
import {
  MODEL_FINALIZER,
  ModelReconciler,
  type ModelControllerDeps,
} from '../../../operator/controllers/model/reconciler.js';
import { sidecarPlacement } from '../../../operator/webhook/sidecar-placement.js';
import { Cluster, HeldModels } from './model-cluster.js';
import { ProcessEnvCredentials } from '../../../operator/storage/credentials.js';
import { WorkflowAdmission } from '../../../operator/workflows/workflow-admission.js';
import { Held } from './held-source.js';
import type { KeptName } from '../../../operator/controllers/model/names.js';
import { aModel, aWorkflow } from '../../builders/resources.js';

describe('a Model’s addresses (a deleted Service keeps its cluster IP until no route names it)', () => {
  let folder: string;
  let models: HeldModels;
  let workflows: Held<Workflow>;
  let routes: Map<string, Route>;
  let journal: string[];
  let cluster: Cluster;
  let reconciler: ModelReconciler;
  /** What Redis keeps of the names kept for deleted Models' namespaces. */
  let kept: KeptName[];
  /** How many of the next reads of the kept names fail (Redis down). */
  let loadFails: number;
  /** Models the reconciler's own sources asked to be reconciled. */
  let woken: string[];

  beforeAll(() => {
    folder = mkdtempSync(path.join(tmpdir(), 'tollgate-model-'));
    writeFileSync(
      path.join(folder, 'model-settings.json'),
      JSON.stringify({
        name: 'model-scorer',
        implementation: 'mlserver_sklearn.SKLearnModel',
        parameters: { uri: './model.joblib', content_type: 'np' },
        inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 4] }],
      }),
    );
    writeFileSync(path.join(folder, 'model.joblib'), 'not read here');
  });
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  beforeEach(async () => {
    models = new HeldModels();
    workflows = new Held();
    routes = new Map();
    journal = [];
    cluster = new Cluster(journal);
    kept = [];
    loadFails = 0;
    woken = [];
    for (const workflow of ['fraud', 'loans'])
      workflows.put(aWorkflow(workflow, 'alice', ['team-a'], { creationTimestamp: '2026-01-01T00:00:00Z' }));
    reconciler = await build();
  });

  /** An operator process: a fresh one knows nothing of what an earlier one wrote. */
  async function build(extra: Partial<ModelControllerDeps> = {}): Promise<ModelReconciler> {
    const remove = (key: string, source?: string): Promise<boolean> => {
      const had = routes.get(key);
      if (had === undefined || (source !== undefined && had.source !== source)) return Promise.resolve(false);
      routes.delete(key);
      journal.push(`remove ${key}`);
      return Promise.resolve(true);
    };
    const built = new ModelReconciler({
      models,
      runtime: cluster,
      routes: {
        put: (key, route) => {
          if (JSON.stringify(routes.get(key)) !== JSON.stringify(route))
            journal.push(`put ${key} ${route.url}`);
          routes.set(key, route);
          return Promise.resolve(true);
        },
        remove,
        removeAllOf: async (source, keep = new Set()) => {
          journal.push(`sweep ${source}`);
          let n = 0;
          for (const key of [...routes.keys()]) if (!keep.has(key) && (await remove(key, source))) n++;
          return n;
        },
      },
      events: { record: () => Promise.resolve() },
      credentials: new ProcessEnvCredentials(),
      log: createLogger('model-addresses-test', 'silent'),
      workflows: new WorkflowAdmission(workflows),
      keptNames: {
        keep: (name) => {
          journal.push(`keep ${name.namespace}/${name.name}`);
          kept.push(name);
          return Promise.resolve();
        },
        load: () => (loadFails-- > 0 ? Promise.reject(new Error('redis down')) : Promise.resolve([...kept])),
      },
      figures: () => Promise.resolve({ calls: 0, failures: 0, p95LatencyMs: undefined }),
      ...extra,
    });
    for (const owned of built.watches.owns ?? [])
      await owned.start((ref) => woken.push(`${ref.namespace}/${ref.name}`));
    await models.start((ref, gone) => {
      if (gone) built.noteDeleted(ref, gone);
    });
    return built;
  }

  /** A new process in which another namespace's Model is routed at `url`. */
  async function withOtherModelRoutedAt(url: string): Promise<ModelReconciler> {
    const built = await build();
    // The routes part's memory of what this process routed, as another Model's pass would leave it.
    const parts = built as unknown as { routes: { routed: Map<string, unknown> } };
    parts.routes.routed.set('team-b/other', {
      workflow: undefined,
      keys: [],
      urls: [url],
    });
    return built;
  }

  const put = (over: Partial<Model['spec']> = {}, meta: Partial<Model['metadata']> = {}): void =>
    models.put(
      aModel(
        'model-scorer',
        { storageUri: pathToFileURL(folder).href, ...over },
        { namespace: 'team-a', uid: 'u1', generation: 1, finalizers: [MODEL_FINALIZER], ...meta },
      ),
    );
  const deleted = () => ({ deletionTimestamp: '2026-03-01T00:00:00Z' });
  /** Mallory's Model of the same name, made after alice's. */
  const mallorys = (): Model =>
    aModel(
      'model-scorer',
      { storageUri: pathToFileURL(folder).href },
      { namespace: 'team-m', uid: 'u2', generation: 1, creationTimestamp: '2026-02-01T00:00:00Z' },
    );
  const reconcile = () => reconciler.reconcile('team-a/model-scorer');
  const MODEL_ROUTE = 'tg:route:model:model-scorer';
  const FRAUD_ROUTE = 'tg:route:bda:fraud:model-scorer';

  it('a Model deleted: its routes go, then its Service, then the Service’s address', async () => {
    put({ workflow: 'fraud' });
    await reconcile();
    expect(journal).toEqual([
      `put ${MODEL_ROUTE} http://10.96.0.10:8080`,
      `put ${FRAUD_ROUTE} http://10.96.0.10:8080`,
    ]);
    put({ workflow: 'fraud' }, deleted());
    await reconcile();
    // Before its first release, this process looks for any route of the Model it did not write.
    expect(journal.slice(2)).toEqual([
      'keep team-a/model-scorer',
      `remove ${MODEL_ROUTE}`,
      `remove ${FRAUD_ROUTE}`,
      'sweep model/team-a/model-scorer',
      'release 10.96.0.10',
    ]);
    expect(models.list()).toEqual([]);
  });

  it('its Service deleted by its team: the Model is unrouted, the address let go, and a new Service routed', async () => {
    put();
    await reconcile();
    cluster.deleteService({ namespace: 'team-a', name: 'model-scorer' });
    await reconcile();
    expect(journal.slice(1)).toEqual([
      `remove ${MODEL_ROUTE}`,
      'sweep model/team-a/model-scorer',
      'release 10.96.0.10',
    ]);
    // The Service gone, the next pass makes it again, at another address.
    await reconcile();
    expect(journal.slice(4)).toEqual([`put ${MODEL_ROUTE} http://10.96.0.11:8080`]);
    // Deleted again: released at once, the sweep done.
    cluster.deleteService({ namespace: 'team-a', name: 'model-scorer' });
    await reconcile();
    expect(journal.slice(5)).toEqual([`remove ${MODEL_ROUTE}`, 'release 10.96.0.11']);
  });

  it('its workflow changed, then the Model deleted before a pass saw the change: the earlier route goes too', async () => {
    put({ workflow: 'fraud' });
    await reconcile();
    // One Service deleted and made again: this process has swept the Model's routes once.
    cluster.deleteService({ namespace: 'team-a', name: 'model-scorer' });
    await reconcile();
    await reconcile();
    journal.length = 0;
    put({ workflow: 'loans' }, deleted());
    await reconcile();
    expect(journal).toEqual([
      'keep team-a/model-scorer',
      `remove ${MODEL_ROUTE}`,
      `remove ${FRAUD_ROUTE}`,
      'release 10.96.0.11',
    ]);
    expect(routes.size).toBe(0);
  });

  it('after a restart, every route its source wrote is swept before an address is let go', async () => {
    put({ workflow: 'fraud' });
    await reconcile();
    // While no operator ran, its workflow changed, and its team deleted its Service.
    put({ workflow: 'loans' });
    cluster.deleteService({ namespace: 'team-a', name: 'model-scorer' });
    reconciler = await build();
    journal.length = 0;
    await reconcile();
    expect(journal).toEqual([
      `remove ${MODEL_ROUTE}`,
      'sweep model/team-a/model-scorer',
      `remove ${FRAUD_ROUTE}`,
      'release 10.96.0.10',
    ]);
    expect(routes.size).toBe(0);
  });

  it('its finalizer taken off by hand, a Model being deleted is still unrouted and its address let go', async () => {
    put();
    await reconcile();
    put({}, { ...deleted(), finalizers: ['example.com/other'] });
    await reconcile();
    expect(journal.slice(1)).toEqual([
      `remove ${MODEL_ROUTE}`,
      'sweep model/team-a/model-scorer',
      'release 10.96.0.10',
    ]);
  });

  it('a deleted Model’s name stays its namespace’s across an operator restart: a Model waiting with it gets nothing', async () => {
    put();
    await reconcile();
    const squat = mallorys();
    models.put({
      ...models.list()[0]!,
      metadata: { ...models.list()[0]!.metadata, creationTimestamp: '2026-01-01T00:00:00Z' },
    });
    models.put(squat);
    put({}, { ...deleted(), creationTimestamp: '2026-01-01T00:00:00Z' });
    await reconcile();
    expect(kept).toEqual([expect.objectContaining({ name: 'model-scorer', namespace: 'team-a' })]);
    // A new operator process, the deleted Model gone: the squat is still refused, and routed nothing.
    reconciler = await build();
    journal.length = 0;
    await reconciler.reconcile('team-m/model-scorer');
    expect(journal.filter((line) => line.startsWith('put'))).toEqual([]);
    expect(models.get({ namespace: 'team-m', name: 'model-scorer' })?.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Ready', reason: 'NameTaken' }),
    );
    expect(routes.size).toBe(0);
  });

  it('a Model waiting for a name is torn down once, looks again only now and then, and is woken when the holder goes', async () => {
    put();
    await reconcile();
    models.put(mallorys());
    models.put({
      ...models.list()[0]!,
      metadata: { ...models.list()[0]!.metadata, creationTimestamp: '2026-01-01T00:00:00Z' },
    });
    const tearDown = jest.spyOn(reconciler as unknown as { tearDown: () => Promise<void> }, 'tearDown');
    journal.length = 0;
    const first = await reconciler.reconcile('team-m/model-scorer');
    // Again and again: torn down the first time only, and no look sooner than a minute.
    const again = await reconciler.reconcile('team-m/model-scorer');
    expect(tearDown).toHaveBeenCalledTimes(1);
    tearDown.mockRestore();
    expect(journal).toEqual([]);
    expect([first?.requeueAfterMs, again?.requeueAfterMs]).toEqual([60_000, 60_000]);
    // The holder deleted: the waiter is woken at once (its name kept 5 minutes for team-a), and
    // told until when, looking again then.
    woken.length = 0;
    put({}, { ...deleted(), creationTimestamp: '2026-01-01T00:00:00Z' });
    await reconcile();
    expect(woken).toEqual(['team-m/model-scorer']);
    const waiting = await reconciler.reconcile('team-m/model-scorer');
    expect(waiting?.requeueAfterMs).toBe(60_000);
    expect(models.get({ namespace: 'team-m', name: 'model-scorer' })?.status?.conditions).toContainEqual(
      expect.objectContaining({ reason: 'NameTaken', message: expect.stringContaining('is kept until') }),
    );
  });

  it('a Model asking for a sidecar where the webhook puts none: refused, saying what to set; what runs stays', async () => {
    const readyCondition = () =>
      models
        .get({ namespace: 'team-a', name: 'model-scorer' })
        ?.status?.conditions?.find((c) => c.type === 'Ready');
    reconciler = await build({
      sidecarPlacement: sidecarPlacement({ ownNamespace: 'tollgate', excluded: ['team-a'] }),
    });
    put({ gateway: 'sidecar' });
    await reconcile();
    expect(journal).toEqual([]);
    expect(cluster.workloads({ namespace: 'team-a', name: 'model-scorer' })).toEqual([]);
    expect(readyCondition()).toMatchObject({ status: 'False', reason: 'SidecarUnavailable' });
    expect(readyCondition()?.message).toMatch(/"team-a" is in the chart's sidecar.webhook.excludeNamespaces/);
    expect(readyCondition()?.message).toContain('set spec.gateway: central');

    put({ gateway: 'central' }, { generation: 2 });
    await reconcile();
    expect(journal).toEqual([`put ${MODEL_ROUTE} http://10.96.0.10:8080`]);
    // Turned to sidecar while it serves: still served as it was, and the status says why not more.
    journal.length = 0;
    put({ gateway: 'sidecar' }, { generation: 3 });
    await reconcile();
    expect(journal).toEqual([]);
    expect(routes.has(MODEL_ROUTE)).toBe(true);
    expect(readyCondition()?.reason).toBe('SidecarUnavailable');

    // The chart's default (models.gateway) counts as asking; a guarded namespace is served.
    reconciler = await build({
      defaultGateway: 'sidecar',
      sidecarPlacement: sidecarPlacement({ ownNamespace: 'tollgate', excluded: [] }),
    });
    put({}, { generation: 4 });
    await reconcile();
    expect(readyCondition()?.reason).not.toBe('SidecarUnavailable');
    const unplaced = sidecarPlacement(undefined)('team-a');
    expect(unplaced).toMatch(/the sidecar webhook is off/);
    expect(sidecarPlacement({ ownNamespace: 'tollgate', excluded: [] })('tollgate')).toMatch(
      /"tollgate" is Tollgate's own/,
    );
  });

  it('the names kept unreadable (Redis down): no Model is reconciled until they are read', async () => {
    loadFails = 1;
    put();
    await expect(reconcile()).rejects.toThrow('redis down');
    expect(journal).toEqual([]);
    await reconcile();
    expect(journal).toEqual([`put ${MODEL_ROUTE} http://10.96.0.10:8080`]);
  });

  it('its Service relabelled by its team as a workflow service: that service’s routes go before the address', async () => {
    put();
    await reconcile();
    const svc = cluster.services.get('team-a/model-scorer')!;
    svc.labels = { 'tollgate.dev/workflow': 'fraud', 'tollgate.dev/service': 'model-scorer' };
    // Routed as a workflow service before the relabelling reached the workflow controller.
    routes.set(FRAUD_ROUTE, { url: 'http://10.96.0.10:8080', source: 'service/team-a/model-scorer' });
    cluster.deleteService({ namespace: 'team-a', name: 'model-scorer' });
    await reconcile();
    expect(journal.slice(1)).toEqual([
      `remove ${MODEL_ROUTE}`,
      'sweep model/team-a/model-scorer',
      'sweep service/team-a/model-scorer',
      `remove ${FRAUD_ROUTE}`,
      'release 10.96.0.10',
    ]);
  });

  it('an IPv6 address is matched to the route that names it in brackets', async () => {
    cluster.ipv6 = true;
    put();
    await reconcile();
    expect(routes.get(MODEL_ROUTE)?.url).toBe('http://[fd00:10:96::10]:8080');
    // Still routed (another Model's route names it): held.
    reconciler = await withOtherModelRoutedAt('http://[fd00:10:96::10]:8080');
    cluster.deleteService({ namespace: 'team-a', name: 'model-scorer' });
    await reconcile();
    expect(journal.some((line) => line.startsWith('release'))).toBe(false);
  });

  it('an address another Model’s route still names is not let go', async () => {
    put();
    await reconcile();
    // Another Model (a relabelled Service, a stale cache) routed at the same address.
    reconciler = await withOtherModelRoutedAt('http://10.96.0.10:8080');
    cluster.deleteService({ namespace: 'team-a', name: 'model-scorer' });
    await reconcile();
    expect(journal.some((line) => line.startsWith('release'))).toBe(false);
  });
});
