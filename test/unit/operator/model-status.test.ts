import type { FolderCheck } from '../../../common/model-settings/check-folder.js';
import type { Model } from '../../../common/resources/model.js';
import { servedVersions } from '../../../common/resources/model-versions.js';
import {
  desiredStatus,
  nameTakenStatus,
  type Observation,
} from '../../../operator/controllers/model/status.js';
import {
  boundedMessages,
  sameStatus,
  STATUS_MESSAGE_MAX,
} from '../../../operator/controllers/model/status-writer.js';
import { aModel } from '../../builders/resources.js';

const model = (status?: Model['status']): Model => ({
  ...aModel('model-a', { storageUri: 's3://b/a' }, { namespace: 'ns', generation: 3 }),
  ...(status ? { status } : {}),
});
const ok: FolderCheck = {
  ok: true,
  generated: false,
  settings: {
    name: 'model-a',
    implementation: 'mlserver_sklearn.SKLearnModel',
    parameters: { uri: './m.joblib', content_type: 'np' },
  },
  declared: { contentType: 'np', inputs: [{ name: 'f', datatype: 'FP32', shape: [-1, 2] }], outputs: [] },
};
const runtime = (ready: number, extra = {}) => ({
  replicas: 2,
  readyReplicas: ready,
  url: 'http://model-a.ns.svc:8080',
  rollingOut: false,
  ...extra,
});
/** The status of a Model with one unnamed version. */
const one = (m: Model, obs: Observation, now: Date) =>
  desiredStatus(
    m,
    servedVersions(m.metadata.name, m.spec).map((version) => ({ version, obs })),
    [],
    now,
  );
const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T00:05:00Z');
const ready = (s: Model['status']) => s?.conditions?.find((c) => c.type === 'Ready');

describe('Model status', () => {
  test('a settings file with thousands of problems, or a store saying megabytes: every message fits a status', () => {
    const problems = Array.from({ length: 2_000 }, (_, i) => ({
      path: `inputs[${i}].datatype`,
      message: `"float32" is not a V2 datatype; use one of BOOL, UINT8, FP32, BYTES`,
    }));
    const bad = one(model(), { kind: 'settings', check: { ok: false, problems } }, t0);
    const settings = bad.conditions?.find((c) => c.type === 'SettingsValid');
    // Twenty named, the rest counted: the author still reads what to fix first.
    expect(settings?.message).toMatch(/^inputs\[0\]\.datatype: "float32" is not a V2 datatype/);
    expect(settings?.message).toMatch(/; and 1980 more problems$/);
    expect(settings?.message.length).toBeLessThan(STATUS_MESSAGE_MAX);
    const huge = 'x'.repeat(1_000_000);
    const said = boundedMessages(
      one(model(), { kind: 'storage-error', reason: 'StorageUnreachable', message: huge }, t0),
    );
    for (const c of said.conditions ?? []) expect(c.message.length).toBeLessThanOrEqual(STATUS_MESSAGE_MAX);
    expect(said.conditions?.find((c) => c.type === 'SettingsValid')?.message).toMatch(/^x+… \(cut short\)$/);
    const versions = boundedMessages({
      versions: [{ name: 'v1', phase: 'Failed', message: huge }],
      rollout: { version: 'v1', phase: 'RolledBack', message: huge },
    });
    expect(versions.versions?.[0]?.message?.length).toBe(STATUS_MESSAGE_MAX);
    expect(versions.rollout?.message?.length).toBe(STATUS_MESSAGE_MAX);
  });

  test('phases follow the runtime: Loading, Ready, Failed, Pending at zero replicas', () => {
    expect(one(model(), { kind: 'settings', check: ok, runtime: runtime(0) }, t0).phase).toBe('Loading');
    expect(one(model(), { kind: 'settings', check: ok, runtime: runtime(1) }, t0)).toMatchObject({
      phase: 'Ready',
      readyReplicas: 1,
      replicas: 2,
      observedGeneration: 3,
      url: 'http://model-a.ns.svc:8080',
    });
    const stuck = one(
      model(),
      {
        kind: 'settings',
        check: ok,
        runtime: runtime(0, {
          failure: { reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet has timed out progressing' },
        }),
      },
      t0,
    );
    expect(stuck.phase).toBe('Failed');
    expect(ready(stuck)).toMatchObject({
      reason: 'ProgressDeadlineExceeded',
      message: '0/2 replicas ready: ReplicaSet has timed out progressing',
    });
    const zero = one(model(), { kind: 'settings', check: ok, runtime: { ...runtime(0), replicas: 0 } }, t0);
    expect(zero.phase).toBe('Pending');
    expect(ready(zero)?.reason).toBe('ScaledToZero');
  });

  test('a condition keeps its transition time while its status holds, and takes a new one when it flips', () => {
    const first = one(model(), { kind: 'settings', check: ok, runtime: runtime(0) }, t0);
    const same = one(model(first), { kind: 'settings', check: ok, runtime: runtime(0) }, t1);
    expect(ready(same)?.lastTransitionTime).toBe('2026-01-01T00:00:00Z');
    expect(sameStatus(first, same)).toBe(true);
    const flipped = one(model(first), { kind: 'settings', check: ok, runtime: runtime(1) }, t1);
    expect(ready(flipped)?.lastTransitionTime).toBe('2026-01-01T00:05:00Z');
    expect(sameStatus(first, flipped)).toBe(false);
  });

  test('bad settings: SettingsValid False with every problem, no runtime fields', () => {
    const s = one(
      model(),
      {
        kind: 'settings',
        check: {
          ok: false,
          problems: [
            { path: 'model-settings.json:name', message: 'set "name": "model-a"' },
            { path: 'model-settings.json:inputs', message: 'add "inputs"' },
          ],
        },
      },
      t0,
    );
    expect(s.phase).toBe('Failed');
    expect(s.conditions?.[0]).toMatchObject({
      type: 'SettingsValid',
      status: 'False',
      reason: 'SettingsInvalid',
      message: 'model-settings.json:name: set "name": "model-a"; model-settings.json:inputs: add "inputs"',
    });
    expect(s.url).toBeUndefined();
  });

  test('field order does not make two statuses differ', () => {
    expect(sameStatus({ phase: 'Ready', url: 'u' }, { url: 'u', phase: 'Ready' })).toBe(true);
    expect(sameStatus(undefined, { phase: 'Ready' })).toBe(false);
  });

  test('versions: the default’s figures at the top, each version’s phase and traffic, a broken canary named, draining ones listed', () => {
    const m: Model = {
      ...model(),
      spec: {
        versions: [
          { name: '1', storageUri: 's3://b/1' },
          { name: '2', storageUri: 's3://b/2' },
          { name: '3', storageUri: 's3://b/3' },
        ],
        defaultVersion: '2',
        traffic: [{ version: '1', percent: 25 }],
      },
    };
    const [v1, v2, v3] = servedVersions('model-a', m.spec);
    if (v1 === undefined || v2 === undefined || v3 === undefined) throw new Error('three versions');
    const broken: Observation = {
      kind: 'settings',
      check: {
        ok: false,
        problems: [{ path: 'model-settings.json:name', message: 'set "name": "model-a"' }],
      },
    };
    const s = desiredStatus(
      m,
      [
        { version: v1, obs: { kind: 'settings', check: ok, runtime: runtime(0) } },
        { version: v2, obs: { kind: 'settings', check: ok, runtime: runtime(2) } },
        { version: v3, obs: broken },
      ],
      [{ name: '0', serving: false }],
      t0,
    );
    expect(s).toMatchObject({ phase: 'Ready', defaultVersion: '2', readyReplicas: 2 });
    expect(s.versions).toEqual([
      expect.objectContaining({ name: '1', phase: 'Loading', traffic: 25, readyReplicas: 0 }),
      expect.objectContaining({ name: '2', phase: 'Ready', traffic: 75, readyReplicas: 2 }),
      expect.objectContaining({
        name: '3',
        phase: 'Failed',
        traffic: 0,
        message: 'model-settings.json:name: set "name": "model-a"',
      }),
      expect.objectContaining({ name: '0', phase: 'Draining', traffic: 0 }),
    ]);
    expect(s.conditions?.find((c) => c.type === 'SettingsValid')).toMatchObject({
      status: 'False',
      message: 'version "3": model-settings.json:name: set "name": "model-a"',
    });
    expect(ready(s)).toMatchObject({ status: 'True', message: 'version "2": 2/2 replicas ready' });
  });
});

describe('a Model refused for its name', () => {
  it('is told what to do, never which other namespace holds the name', () => {
    const holders = [
      { holder: 'team-alice/model-a' },
      { holder: 'team-alice/model-a', remade: true as const },
      { holder: 'team-alice/model-a', keptUntil: t1 },
    ];
    for (const holder of holders) {
      const status = nameTakenStatus(model(), holder, t0);
      const cond = ready(status);
      expect([status.phase, cond?.reason]).toEqual(['Failed', 'NameTaken']);
      expect(cond?.message).toContain('rename this Model');
      expect(cond?.message).not.toContain('team-alice');
    }
    expect(ready(nameTakenStatus(model(), holders[2]!, t0))?.message).toContain(
      `kept until ${t1.toISOString()}`,
    );
  });
});
