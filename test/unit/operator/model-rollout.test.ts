import type { VersionFigures } from '../../../common/redis/version-figures.js';
import type { ModelSpec } from '../../../common/resources/model.js';
import { servedVersions, versionProblems } from '../../../common/resources/model-versions.js';
import {
  advanceRollout,
  effectiveSpec,
  rolloutCondition,
  rolloutRevision,
  type RolloutStatus,
} from '../../../operator/controllers/model/rollout.js';

const spec = (rollout: Partial<NonNullable<ModelSpec['rollout']>> = {}): ModelSpec => ({
  versions: [
    { name: '1', storageUri: 'file:///m/1' },
    { name: '2', storageUri: 'file:///m/2' },
  ],
  defaultVersion: '1',
  rollout: { version: '2', steps: [10, 50], stepSeconds: 60, minCalls: 20, maxErrorRate: 0.05, ...rollout },
  replicas: 1,
});
const T0 = Date.parse('2026-11-26T03:00:00Z');
const figures = (f: Partial<VersionFigures>) => async (): Promise<VersionFigures> => ({
  calls: 0,
  failures: 0,
  p95LatencyMs: undefined,
  ...f,
});
const none = figures({});

/** Drives one look after another, as the reconciler does. */
async function look(
  s: ModelSpec,
  prev: RolloutStatus | undefined,
  at: number,
  f: Partial<VersionFigures> = {},
  ready = true,
) {
  const step = await advanceRollout(s, prev, ready, figures(f), at);
  if (step === undefined) throw new Error('no rollout');
  return step;
}

describe('automatic canary analysis (spec.rollout)', () => {
  test('waits for the canary, then starts at the first step with an event', async () => {
    const s = spec();
    const waiting = await look(s, undefined, T0, {}, false);
    expect(waiting.status).toMatchObject({ phase: 'Waiting', weight: 0 });
    expect(waiting.event).toBeUndefined();
    expect(effectiveSpec(s, waiting.status).traffic).toEqual([]);
    const started = await look(s, waiting.status, T0 + 1000);
    expect(started.status).toMatchObject({ phase: 'Progressing', step: 0, weight: 10, version: '2' });
    expect(started.event).toMatchObject({ type: 'Normal', reason: 'RolloutStarted' });
    expect(effectiveSpec(s, started.status).traffic).toEqual([{ version: '2', percent: 10 }]);
    expect(
      servedVersions('model-x', effectiveSpec(s, started.status)).map((v) => [v.name, v.percent]),
    ).toEqual([
      ['1', 90],
      ['2', 10],
    ]);
  });

  test('a step passes after stepSeconds with minCalls within bounds; the last promotes', async () => {
    const s = spec();
    const started = (await look(s, undefined, T0)).status;
    const early = await look(s, started, T0 + 30_000, { calls: 100, failures: 1 });
    expect(early.status).toMatchObject({ phase: 'Progressing', step: 0, calls: 100, errorRate: 0.01 });
    expect(early.event).toBeUndefined();
    const quiet = await look(s, started, T0 + 61_000, { calls: 5 });
    expect(quiet.status.phase).toBe('Progressing');
    expect(quiet.status.message).toContain('waiting for 20 calls');
    const second = await look(s, started, T0 + 61_000, { calls: 40, failures: 1 });
    expect(second.status).toMatchObject({ phase: 'Progressing', step: 1, weight: 50, calls: 0 });
    expect(second.event?.reason).toBe('RolloutStep');
    const promoted = await look(s, second.status, T0 + 130_000, {
      calls: 200,
      failures: 0,
      p95LatencyMs: 25,
    });
    expect(promoted.status).toMatchObject({ phase: 'Promoted', weight: 100, p95LatencyMs: 25 });
    expect(promoted.event).toMatchObject({ type: 'Normal', reason: 'Promoted' });
    expect(promoted.recheckMs).toBeUndefined();
    const served = effectiveSpec(s, promoted.status);
    expect(served.defaultVersion).toBe('2');
    expect(servedVersions('model-x', served).map((v) => [v.name, v.percent, v.isDefault])).toEqual([
      ['1', 0, false],
      ['2', 100, true],
    ]);
    expect(rolloutCondition(promoted.status)).toMatchObject({ status: 'True', reason: 'Promoted' });
    // Over: no more looks at the figures, and it stays promoted.
    const after = await advanceRollout(
      s,
      promoted.status,
      true,
      () => Promise.reject(new Error('asked')),
      T0 + 1e6,
    );
    expect(after?.status).toEqual(promoted.status);
  });

  test('too many failures roll back as soon as minCalls are in, without waiting for the step', async () => {
    const s = spec();
    const started = (await look(s, undefined, T0)).status;
    const few = await look(s, started, T0 + 2_000, { calls: 10, failures: 10 });
    expect(few.status.phase).toBe('Progressing');
    const back = await look(s, started, T0 + 3_000, { calls: 20, failures: 2 });
    expect(back.status).toMatchObject({ phase: 'RolledBack', weight: 0, calls: 20, errorRate: 0.1 });
    expect(back.event).toMatchObject({ type: 'Warning', reason: 'RolledBack' });
    expect(back.event?.message).toContain('error rate 10% is above spec.rollout.maxErrorRate 5%');
    expect(effectiveSpec(s, back.status).traffic).toEqual([]);
    expect(rolloutCondition(back.status)).toMatchObject({
      type: 'Rollout',
      status: 'False',
      reason: 'RolledBack',
    });
    // The same rollout is not tried again; a new canary folder is a new rollout.
    expect((await look(s, back.status, T0 + 1e6)).status.phase).toBe('RolledBack');
    const rebuilt: ModelSpec = {
      ...s,
      versions: [
        { name: '1', storageUri: 'file:///m/1' },
        { name: '2', storageUri: 'file:///m/2-fixed' },
      ],
    };
    expect(rolloutRevision(rebuilt)).not.toBe(rolloutRevision(s));
    expect(effectiveSpec(rebuilt, back.status).traffic).toEqual([]);
    expect((await look(rebuilt, back.status, T0 + 1e6)).status).toMatchObject({
      phase: 'Progressing',
      step: 0,
    });
  });

  test('tuning a promoted rollout keeps it promoted; tuning a rolled-back one tries the canary again', async () => {
    const s = spec();
    const started = (await look(s, undefined, T0)).status;
    const two = (await look(s, started, T0 + 61_000, { calls: 40 })).status;
    const promoted = (await look(s, two, T0 + 122_000, { calls: 40 })).status;
    expect(promoted.phase).toBe('Promoted');
    const tuned = spec({ maxErrorRate: 0.2, steps: [5] });
    expect(rolloutRevision(tuned)).toBe(rolloutRevision(s));
    expect((await look(tuned, promoted, T0 + 200_000)).status).toEqual(promoted);
    expect(effectiveSpec(tuned, promoted).defaultVersion).toBe('2');

    const back = (await look(s, started, T0 + 5_000, { calls: 20, failures: 20 })).status;
    expect(back.phase).toBe('RolledBack');
    expect((await look(s, back, T0 + 10_000)).status).toEqual(back);
    const retried = await look(tuned, back, T0 + 10_000);
    expect(retried.status).toMatchObject({ phase: 'Progressing', step: 0, weight: 5 });
    expect(retried.event?.reason).toBe('RolloutStarted');
  });

  test('a running step takes a changed bound at its next judgement', async () => {
    const s = spec();
    const started = (await look(s, undefined, T0)).status;
    const strict = spec({ maxErrorRate: 0.001 });
    const judged = await look(strict, started, T0 + 5_000, { calls: 100, failures: 1 });
    expect(judged.status.phase).toBe('RolledBack');
    expect(judged.status.message).toContain('above spec.rollout.maxErrorRate 0.1%');
  });

  test('a canary with no ready replica for ten minutes is rolled back', async () => {
    const s = spec();
    const waiting = (await look(s, undefined, T0, {}, false)).status;
    const still = (await look(s, waiting, T0 + 9 * 60_000, {}, false)).status;
    expect(still).toMatchObject({ phase: 'Waiting', stepStartedAt: waiting.stepStartedAt });
    const gaveUp = await look(s, still, T0 + 11 * 60_000, {}, false);
    expect(gaveUp.status.phase).toBe('RolledBack');
    expect(gaveUp.event).toMatchObject({ type: 'Warning', reason: 'RolledBack' });
    expect(gaveUp.status.message).toContain('had no ready replica for 10 minutes');
  });

  test('a canary that loses its replicas during a step is rolled back after the same ten minutes', async () => {
    const s = spec();
    const started = (await look(s, undefined, T0)).status;
    const still = await look(s, started, T0 + 60_000 + 9 * 60_000, { calls: 3 }, false);
    expect(still.status.phase).toBe('Progressing');
    expect(still.status.message).toContain('the canary has no ready replica');
    const gaveUp = await look(s, started, T0 + 60_000 + 11 * 60_000, { calls: 3 }, false);
    expect(gaveUp.status).toMatchObject({ phase: 'RolledBack', weight: 0 });
    expect(gaveUp.event?.reason).toBe('RolledBack');
  });

  test('a p95 latency above maxLatencyMs rolls back; without the bound latency is only shown', async () => {
    const slow = spec({ maxLatencyMs: 100 });
    const started = (await look(slow, undefined, T0)).status;
    const back = await look(slow, started, T0 + 5_000, { calls: 50, p95LatencyMs: 250 });
    expect(back.status.phase).toBe('RolledBack');
    expect(back.status.message).toContain('p95 latency (≤ 250 ms) is above spec.rollout.maxLatencyMs 100 ms');
    const unbounded = spec();
    const s2 = (await look(unbounded, undefined, T0)).status;
    expect((await look(unbounded, s2, T0 + 5_000, { calls: 50, p95LatencyMs: 250 })).status.phase).toBe(
      'Progressing',
    );
  });

  test('a Model without spec.rollout is served as written', async () => {
    const plain: ModelSpec = { ...spec(), rollout: undefined, traffic: [{ version: '2', percent: 30 }] };
    expect(await advanceRollout(plain, undefined, true, none, T0)).toBeUndefined();
    expect(effectiveSpec(plain, undefined)).toBe(plain);
  });

  test('stores without an API server check the CRD rules for shadow and rollout', () => {
    const problems = (s: Partial<ModelSpec>) =>
      versionProblems('model-x', { ...spec(), rollout: undefined, ...s }).map(
        (p) => `${p.field}: ${p.message}`,
      );
    expect(problems({ shadow: { version: '1' } })).toEqual([
      'spec.shadow.version: "1" is the default version; spec.shadow.version names a version that only gets copies of its calls',
    ]);
    expect(problems({ shadow: { version: '9' } })[0]).toContain('not one of spec.versions (1, 2)');
    expect(problems({ shadow: { version: '2' }, traffic: [{ version: '2', percent: 5 }] })).toEqual([
      `spec.shadow.version: "2" also takes calls in spec.traffic: a shadow's answers are never returned`,
    ]);
    expect(problems({ rollout: { version: '2', steps: [50, 20] } })).toEqual([
      'spec.rollout.steps: spec.rollout.steps must increase (50, 20)',
    ]);
    expect(problems({ rollout: { version: '2' }, traffic: [{ version: '2', percent: 5 }] })).toEqual([
      "spec.traffic: spec.rollout sets the canary's traffic itself: remove spec.traffic",
    ]);
    expect(problems({ rollout: { version: '2' }, shadow: { version: '2' } })).toContain(
      "spec.shadow.version: the rollout's canary cannot also be the shadow version",
    );
    expect(problems({ rollout: { version: '2', steps: [10, 50] }, shadow: undefined })).toEqual([]);
  });

  test("a cohort canary takes all of its callers' calls and none of the others', judged against the default version", async () => {
    const s = spec({ cohort: { identities: ['acme'] }, steps: [10], maxLatencyOverDefaultMs: 20 });
    const started = await look(s, undefined, T0);
    expect(started.status).toMatchObject({ phase: 'Progressing', cohort: 'identities acme' });
    expect(started.status.weight).toBeUndefined();
    expect(started.event?.message).toBe('canary "2" takes the calls of identities acme (step 1 of 1)');
    expect(effectiveSpec(s, started.status).traffic).toEqual([
      { version: '2', cohort: { identities: ['acme'] } },
    ]);
    // The cohort's version takes no share of the others' calls.
    expect(
      servedVersions('model-x', effectiveSpec(s, started.status)).map((v) => [v.name, v.percent, v.cohort]),
    ).toEqual([
      ['1', 100, undefined],
      ['2', 0, { identities: ['acme'] }],
    ]);
    // Each version's own figures: the canary's 30 ms slower than the rest's at p95.
    const byVersion =
      (canary: Partial<VersionFigures>, rest: Partial<VersionFigures>) =>
      async (version: string): Promise<VersionFigures> => ({
        calls: 0,
        failures: 0,
        p95LatencyMs: undefined,
        ...(version === '2' ? canary : rest),
      });
    const slow = await advanceRollout(
      s,
      started.status,
      true,
      byVersion({ calls: 30, p95LatencyMs: 50 }, { calls: 300, failures: 3, p95LatencyMs: 25 }),
      T0 + 5_000,
    );
    expect(slow?.status).toMatchObject({
      phase: 'RolledBack',
      cohort: 'identities acme',
      calls: 30,
      baseline: { calls: 300, errorRate: 0.01, p95LatencyMs: 25 },
    });
    expect(slow?.status.message).toContain(
      "exceeds the default version's (≤ 25 ms) by more than spec.rollout.maxLatencyOverDefaultMs 20 ms",
    );
    expect(slow?.status.message).toContain('default "1": 300 calls, 1% failed, p95 ≤ 25 ms');
    expect(slow?.event).toMatchObject({ type: 'Warning', reason: 'RolledBack' });
    expect(rolloutCondition(slow!.status).message).toContain('identities acme');
    // As fast as the rest (within the bound): it passes its one step and is everyone's default.
    const fine = await advanceRollout(
      s,
      started.status,
      true,
      byVersion({ calls: 30, p95LatencyMs: 25 }, { calls: 300, p95LatencyMs: 10 }),
      T0 + 61_000,
    );
    expect(fine?.status).toMatchObject({ phase: 'Promoted', weight: 100 });
    expect(effectiveSpec(s, fine!.status)).toMatchObject({ defaultVersion: '2', traffic: [] });
  });

  test('stores without an API server check cohorts as the CRD does', () => {
    const problems = (s: Partial<ModelSpec>) =>
      versionProblems('model-x', { ...spec(), rollout: undefined, ...s }).map(
        (p) => `${p.field}: ${p.message}`,
      );
    expect(problems({ traffic: [{ version: '2', cohort: { keys: ['k1'] } }] })).toEqual([]);
    expect(problems({ traffic: [{ version: '2', percent: 5, cohort: { keys: ['k1'] } }] })).toEqual([
      'spec.traffic: the entry of version "2" must set either percent (a share of the calls) or cohort (the callers it serves), not both',
    ]);
    expect(problems({ traffic: [{ version: '2' }] })[0]).toContain('not neither');
    expect(problems({ traffic: [{ version: '2', cohort: { percent: 0 } }] })).toEqual([
      'spec.traffic[0].cohort: spec.traffic[0].cohort names no caller: list identities or keys, or give it a percent above 0',
    ]);
    expect(problems({ rollout: { version: '2', cohort: {} } })).toEqual([
      'spec.rollout.cohort: spec.rollout.cohort names no caller: list identities or keys, or give it a percent above 0',
    ]);
    expect(problems({ shadow: { version: '2', cohort: { identities: [] } } })[0]).toContain(
      'spec.shadow.cohort names no caller',
    );
  });
});
