import { jest } from '@jest/globals';
import type { Model } from '../../../common/resources/model.js';
import type { Workflow } from '../../../common/resources/workflow.js';
import { TollgateError } from '../../../common/errors.js';
import { createLogger } from '../../../common/logger.js';
import { ModelReconciler } from '../../../operator/controllers/model/reconciler.js';
import type { CredentialsResolver } from '../../../operator/storage/credentials.js';
import { WorkflowAdmission } from '../../../operator/workflows/workflow-admission.js';
import { Held } from './held-source.js';
import { Cluster, HeldModels } from './model-cluster.js';
import { aModel } from '../../builders/resources.js';

/**
 * A Model's store is its author's choice: one that answers slowly and wrongly must not hold the
 * reconcile workers every team's Models share. Its versions are checked at once, and a failed
 * check is not made again on every pass, but after 30 s, then twice as long each time (4 min at most).
 */
describe('checking a Model’s store (a failing one backs off)', () => {
  let models: HeldModels;
  let reconciler: ModelReconciler;
  /** Each check of a folder starts by asking for the store's credentials: when, by storage URI. */
  let asked: Array<{ uri: string; at: number }>;
  let now: number;
  /** How the store fails: an error its author fixes, or one that is no one's (it hung). */
  let failure: 'author' | 'hung';
  const SLOW_MS = 300;

  beforeEach(() => {
    now = Date.parse('2026-03-01T00:00:00Z');
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    models = new HeldModels();
    asked = [];
    failure = 'author';
    const credentials: CredentialsResolver = {
      envFor: async (_ns, secretName, uri) => {
        asked.push({ uri, at: performance.now() });
        await new Promise((r) => setTimeout(r, SLOW_MS));
        if (failure === 'hung')
          throw new TollgateError('storage_unavailable', 'the store did not answer in 20 s');
        throw new TollgateError(
          'credentials_not_found',
          `the credentials Secret "${secretName ?? ''}" does not exist in namespace "team-m"`,
        );
      },
    };
    reconciler = new ModelReconciler({
      models,
      runtime: new Cluster([]),
      routes: {
        put: () => Promise.resolve(true),
        remove: () => Promise.resolve(false),
        removeAllOf: () => Promise.resolve(0),
      },
      events: { record: () => Promise.resolve() },
      credentials,
      log: createLogger('store-checks-test', 'silent'),
      workflows: new WorkflowAdmission(new Held<Workflow>()),
      keptNames: { keep: () => Promise.resolve(), load: () => Promise.resolve([]) },
      figures: () => Promise.resolve({ calls: 0, failures: 0, p95LatencyMs: undefined }),
    });
    models.put(
      aModel(
        'model-slow',
        {
          credentials: { secretName: 'absent' },
          versions: ['a', 'b', 'c', 'd', 'e'].map((v) => ({ name: v, storageUri: `s3://bucket/${v}` })),
          defaultVersion: 'a',
        },
        {
          namespace: 'team-m',
          uid: 'u1',
          generation: 1,
          creationTimestamp: '2026-01-01T00:00:00Z',
          finalizers: ['tollgate.dev/model-routes'],
        },
      ),
    );
  });
  afterEach(() => jest.restoreAllMocks());

  const reconcile = () => reconciler.reconcile('team-m/model-slow');
  const modelIn = (namespace: string, name: string): Model =>
    aModel(
      name,
      { credentials: { secretName: 'absent' }, storageUri: `s3://${namespace}/${name}` },
      {
        namespace,
        uid: `${namespace}-${name}`,
        generation: 1,
        creationTimestamp: '2026-01-01T00:00:00Z',
        finalizers: ['tollgate.dev/model-routes'],
      },
    );
  /** Starts the controller's turns source; the Models it wakes, as the controller would enqueue them. */
  const wakes = async (): Promise<string[]> => {
    const woken: string[] = [];
    await reconciler.watches.owns?.[0]?.start((ref) => woken.push(`${ref.namespace}/${ref.name}`));
    return woken;
  };
  const reason = () => models.list()[0]?.status?.conditions?.find((c) => c.type === 'SettingsValid')?.reason;

  it('checks every version at once: a pass waits for the slowest store, not for their sum', async () => {
    const began = performance.now();
    await reconcile();
    const took = performance.now() - began;
    expect(asked.map((a) => a.uri).sort()).toEqual(['a', 'b', 'c', 'd', 'e'].map((v) => `s3://bucket/${v}`));
    expect(took).toBeLessThan(3 * SLOW_MS);
    expect(Math.max(...asked.map((a) => a.at)) - Math.min(...asked.map((a) => a.at))).toBeLessThan(SLOW_MS);
    expect(reason()).toBe('CredentialsNotFound');
  });

  it('does not check a failed folder again before its time, then backs off: 30 s, 60 s, 120 s, 240 s, 240 s', async () => {
    await reconcile();
    expect(asked).toHaveLength(5);
    // Passes in between (a Deployment changed, the periodic look) cost no store a call.
    for (let i = 0; i < 5; i++) await reconcile();
    expect(asked).toHaveLength(5);
    expect(reason()).toBe('CredentialsNotFound');
    const waits = [30_000, 60_000, 120_000, 240_000, 240_000];
    for (const [i, wait] of waits.entries()) {
      now += wait - 1;
      await reconcile();
      expect(asked).toHaveLength(5 * (i + 1));
      now += 1;
      await reconcile();
      expect(asked).toHaveLength(5 * (i + 2));
    }
    // A new generation of the spec (the author's fix) is checked at once.
    const [m] = models.list();
    models.put({ ...m!, metadata: { ...m!.metadata, generation: 2 } });
    await reconcile();
    expect(asked).toHaveLength(5 * (waits.length + 2));
  });

  it('a store that could not be asked is not asked again for 5 s, then 10 s: the pass fails at once meanwhile', async () => {
    failure = 'hung';
    await expect(reconcile()).rejects.toThrow(/did not answer/);
    expect(asked).toHaveLength(5);
    const began = performance.now();
    await expect(reconcile()).rejects.toThrow(/did not answer/);
    expect(performance.now() - began).toBeLessThan(SLOW_MS);
    expect(asked).toHaveLength(5);
    now += 5_000;
    await expect(reconcile()).rejects.toThrow(/did not answer/);
    expect(asked).toHaveLength(10);
    now += 9_999;
    await expect(reconcile()).rejects.toThrow(/did not answer/);
    expect(asked).toHaveLength(10);
    now += 1;
    await expect(reconcile()).rejects.toThrow(/did not answer/);
    expect(asked).toHaveLength(15);
  });

  it('a namespace checks two Models’ stores at once; its next waits its turn off the workers, another namespace’s does not', async () => {
    for (const name of ['model-one', 'model-two', 'model-three']) models.put(modelIn('team-m', name));
    models.put(modelIn('team-n', 'model-other'));
    const woken = await wakes();
    const began = performance.now();
    const results = await Promise.all(
      ['team-m/model-one', 'team-m/model-two', 'team-m/model-three', 'team-n/model-other'].map(
        async (key) => {
          await reconciler.reconcile(key).catch(() => undefined);
          return { key, ms: performance.now() - began };
        },
      ),
    );
    // One of team-m's three ended at once, its store not asked; team-n's was checked beside the two.
    const askedFor = (key: string) => asked.some((a) => a.uri === `s3://${key}`);
    const waited = results.filter((r) => !askedFor(r.key));
    expect(waited.map((r) => r.key.split('/')[0])).toEqual(['team-m']);
    expect(waited[0]?.ms).toBeLessThan(SLOW_MS);
    expect(askedFor('team-n/model-other')).toBe(true);
    // Woken once a turn of team-m's came free, it is checked.
    expect(woken).toEqual([waited[0]?.key]);
    await reconciler.reconcile(waited[0]?.key ?? '').catch(() => undefined);
    expect(askedFor(waited[0]?.key ?? '')).toBe(true);
  });

  it('a Model woken for a turn that needs none (it was deleted) passes the turn on: no Model waits for ever', async () => {
    const names = ['model-a', 'model-b', 'model-c', 'model-d', 'model-e'];
    for (const name of names) models.put(modelIn('team-m', name));
    const woken = await wakes();
    const all = names.map((n) => reconciler.reconcile(`team-m/${n}`).catch(() => undefined));
    await Promise.all(all);
    // Two checked; three waited, and the two turns given back woke the first two of them.
    expect(asked).toHaveLength(2);
    expect(woken).toHaveLength(2);
    const waitedLast = names
      .map((n) => `team-m/${n}`)
      .find((k) => !woken.includes(k) && !asked.some((a) => a.uri === `s3://${k}`));
    // Both woken Models are deleted before their turn: each reconcile finds nothing to check.
    for (const key of [...woken]) {
      const [, name] = key.split('/');
      models.delete({ namespace: 'team-m', name: name ?? '' });
      await reconciler.reconcile(key);
    }
    // The turns they were woken for went on to the one still waiting.
    expect(woken).toContain(waitedLast);
    await reconciler.reconcile(waitedLast ?? '').catch(() => undefined);
    expect(asked.map((a) => a.uri)).toContain(`s3://${waitedLast ?? ''}`);
  });
});
