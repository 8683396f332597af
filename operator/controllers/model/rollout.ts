import { createHash } from 'node:crypto';
import type { VersionFigures } from '../../../common/redis/version-figures.js';
import type { ModelSpec, ModelStatus } from '../../../common/resources/model.js';
import { defaultVersionOf } from '../../../common/resources/model-versions.js';
import { describeCohort, type Cohort } from '../../../common/resources/cohort.js';

/**
 * Automatic canary analysis (spec.rollout), as Flagger and Argo Rollouts do it but judged on the
 * gateways' own per-version figures (common/redis/version-figures.ts): the canary takes each
 * step's share of the calls; a step passes once it ran `stepSeconds` with at least `minCalls`
 * calls within the bounds; the last step passed promotes the canary (it becomes the default), and
 * any bound crossed rolls it back (it takes no calls). With a cohort the canary takes every call
 * of those callers from the first step and none of the others' (as Flagger's A/B testing does
 * with a header), each step one more judgement, against the default version's figures over the
 * same span: what the rest of the callers got. The state lives in status.rollout, never in
 * the spec: the user's manifest stays what they wrote, and a GitOps tool has nothing to revert.
 */
export type RolloutStatus = NonNullable<ModelStatus['rollout']>;
type Rollout = NonNullable<ModelSpec['rollout']>;

export const ROLLOUT_DEFAULTS = {
  steps: [10, 50],
  stepSeconds: 60,
  minCalls: 20,
  maxErrorRate: 0.01,
} as const;

interface Policy {
  version: string;
  steps: number[];
  stepMs: number;
  minCalls: number;
  maxErrorRate: number;
  maxLatencyMs: number | undefined;
  maxLatencyOverDefaultMs: number | undefined;
  cohort: Cohort | undefined;
}

function policyOf(rollout: Rollout): Policy {
  return {
    version: rollout.version,
    steps: rollout.steps ?? [...ROLLOUT_DEFAULTS.steps],
    stepMs: (rollout.stepSeconds ?? ROLLOUT_DEFAULTS.stepSeconds) * 1000,
    minCalls: rollout.minCalls ?? ROLLOUT_DEFAULTS.minCalls,
    maxErrorRate: rollout.maxErrorRate ?? ROLLOUT_DEFAULTS.maxErrorRate,
    maxLatencyMs: rollout.maxLatencyMs,
    maxLatencyOverDefaultMs: rollout.maxLatencyOverDefaultMs,
    cohort: rollout.cohort,
  };
}

/** How long a rollout waits for its canary's first ready replica before it gives up. */
export const WAIT_LIMIT_MS = 10 * 60_000;

const digest = (v: unknown) => createHash('sha256').update(JSON.stringify(v)).digest('hex').slice(0, 16);

/**
 * What the rollout is of: the canary and the default version, by name and folder. A change to
 * either starts it again (a new canary build is a new rollout); a promoted canary stays promoted
 * whatever is tuned afterwards.
 */
export function rolloutRevision(spec: ModelSpec): string | undefined {
  if (spec.rollout === undefined) return undefined;
  const folder = (name: string | undefined) => spec.versions?.find((v) => v.name === name)?.storageUri;
  const stable = defaultVersionOf(spec);
  return digest({
    canary: spec.rollout.version,
    folder: folder(spec.rollout.version),
    stable,
    stableFolder: folder(stable),
  });
}

/** The steps and bounds: a change applies from the next judgement, and tries a rolled-back canary again. */
const policyDigest = (rollout: Rollout): string => digest(policyOf(rollout));

/**
 * The spec the operator serves: the user's, with the rollout's traffic in place (the canary's
 * step weight; all of it once promoted, as the default; none before it starts or once rolled back).
 */
export function effectiveSpec(spec: ModelSpec, rollout: RolloutStatus | undefined): ModelSpec {
  if (spec.rollout === undefined) return spec;
  const current = rollout?.revision === rolloutRevision(spec) ? rollout : undefined;
  if (current?.phase === 'Promoted') return { ...spec, defaultVersion: spec.rollout.version, traffic: [] };
  if (current?.phase === 'Progressing')
    return {
      ...spec,
      traffic: [
        spec.rollout.cohort === undefined
          ? { version: spec.rollout.version, percent: current.weight ?? 0 }
          : { version: spec.rollout.version, cohort: spec.rollout.cohort },
      ],
    };
  return { ...spec, traffic: [] };
}

/** How often a running step is looked at: often enough to stop a bad canary within seconds. */
export const checkEveryMs = (spec: ModelSpec): number =>
  Math.min(10_000, Math.max(1_000, ((spec.rollout?.stepSeconds ?? ROLLOUT_DEFAULTS.stepSeconds) * 1000) / 6));

export interface RolloutEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export interface RolloutStep {
  status: RolloutStatus;
  event?: RolloutEvent;
  /** Look again then (a step running, or waiting for the canary); undefined once it is over. */
  recheckMs?: number;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const percent = (x: number) => `${Math.round(x * 10000) / 100}%`;

/** A version's figures over a step, as status.rollout shows them. */
function judged(f: VersionFigures): Pick<RolloutStatus, 'calls' | 'errorRate' | 'p95LatencyMs'> {
  return {
    calls: f.calls,
    errorRate: f.calls === 0 ? 0 : Math.round((f.failures / f.calls) * 10000) / 10000,
    ...(f.p95LatencyMs === undefined || !Number.isFinite(f.p95LatencyMs)
      ? {}
      : { p95LatencyMs: f.p95LatencyMs }),
  };
}

const figuresText = (f: VersionFigures): string =>
  `${f.calls} calls, ${percent(f.calls === 0 ? 0 : f.failures / f.calls)} failed${f.p95LatencyMs === undefined ? '' : `, p95 ≤ ${f.p95LatencyMs} ms`}`;

/** The end of a rollout that failed: the canary takes no calls, and an Event says why. */
function rolledBack(status: Omit<RolloutStatus, 'phase' | 'weight'>, message: string): RolloutStep {
  return {
    status: { ...status, phase: 'RolledBack', weight: 0, message },
    event: { type: 'Warning', reason: 'RolledBack', message },
  };
}

/** What the canary takes at a step, in words: a share of the calls, or its cohort's. */
const takes = (p: Policy, weight: number): string =>
  p.cohort === undefined ? `takes ${weight}% of the calls` : `takes the calls of ${describeCohort(p.cohort)}`;

/** The canary's share at a step, as status.rollout.weight shows it: none for a cohort (it is by caller). */
const weightAt = (p: Policy, weight: number): { weight?: number } =>
  p.cohort === undefined ? { weight } : {};

/** Why the canary fails its bounds, judged against the default version's calls of the same span. */
function breach(p: Policy, f: VersionFigures, rest: VersionFigures | undefined): string | undefined {
  const rate = f.calls === 0 ? 0 : f.failures / f.calls;
  if (rate > p.maxErrorRate)
    return `its error rate ${percent(rate)} is above spec.rollout.maxErrorRate ${percent(p.maxErrorRate)}`;
  if (p.maxLatencyMs !== undefined && (f.p95LatencyMs ?? 0) > p.maxLatencyMs)
    return `its p95 latency (≤ ${f.p95LatencyMs} ms) is above spec.rollout.maxLatencyMs ${p.maxLatencyMs} ms`;
  const over =
    rest?.p95LatencyMs === undefined || f.p95LatencyMs === undefined ? 0 : f.p95LatencyMs - rest.p95LatencyMs;
  if (p.maxLatencyOverDefaultMs !== undefined && over > p.maxLatencyOverDefaultMs)
    return `its p95 latency (≤ ${f.p95LatencyMs} ms) exceeds the default version's (≤ ${rest?.p95LatencyMs} ms) by more than spec.rollout.maxLatencyOverDefaultMs ${p.maxLatencyOverDefaultMs} ms`;
  return undefined;
}

/**
 * One look at the rollout: where it stands now, given where it stood, whether the canary has a
 * ready replica, and its figures and the default version's since the step began (`figures` is
 * asked only while a step runs).
 */
export async function advanceRollout(
  spec: ModelSpec,
  previous: RolloutStatus | undefined,
  canaryReady: boolean,
  figures: (version: string, fromMs: number, toMs: number) => Promise<VersionFigures>,
  now: number,
): Promise<RolloutStep | undefined> {
  if (spec.rollout === undefined) return undefined;
  const p = policyOf(spec.rollout);
  const revision = rolloutRevision(spec) ?? '';
  const policy = policyDigest(spec.rollout);
  const prev =
    previous?.revision === revision && (previous.phase !== 'RolledBack' || previous.policy === policy)
      ? previous
      : undefined;
  const base = {
    version: p.version,
    revision,
    policy,
    ...(p.cohort === undefined ? {} : { cohort: describeCohort(p.cohort) }),
  };
  const every = checkEveryMs(spec);
  const steps = p.steps.length;
  const of = p.cohort === undefined ? '' : ` (cohort: ${describeCohort(p.cohort)})`;
  if (prev?.phase === 'Promoted' || prev?.phase === 'RolledBack') return { status: prev };
  if (prev === undefined || prev.phase === 'Waiting') {
    if (!canaryReady) {
      const since = prev?.stepStartedAt ?? iso(now);
      if (now - Date.parse(since) > WAIT_LIMIT_MS) {
        const message = `rolled back: version "${p.version}" had no ready replica for ${WAIT_LIMIT_MS / 60_000} minutes (see status.versions); change it or spec.rollout to try again`;
        return rolledBack({ ...base, step: 0, stepStartedAt: since }, message);
      }
      return {
        status: {
          ...base,
          phase: 'Waiting',
          step: 0,
          weight: 0,
          stepStartedAt: since,
          message: `waiting for version "${p.version}" to have a ready replica before its first step`,
        },
        recheckMs: every,
      };
    }
    const first = p.steps[0] ?? 100;
    return {
      status: {
        ...base,
        phase: 'Progressing',
        step: 0,
        ...weightAt(p, first),
        stepStartedAt: iso(now),
        calls: 0,
        errorRate: 0,
        message: `step 1 of ${steps}: "${p.version}" ${takes(p, first)}`,
      },
      event: {
        type: 'Normal',
        reason: 'RolloutStarted',
        message: `canary "${p.version}" ${takes(p, first)} (step 1 of ${steps})`,
      },
      recheckMs: every,
    };
  }
  const step = prev.step ?? 0;
  const since = Date.parse(prev.stepStartedAt ?? iso(now));
  const f = await figures(p.version, since, now);
  const stable = defaultVersionOf(spec);
  const rest = stable === undefined ? undefined : await figures(stable, since, now);
  const seen = { ...judged(f), ...(rest === undefined ? {} : { baseline: judged(rest) }) };
  const text = `${figuresText(f)}${rest === undefined ? '' : `; default "${stable}": ${figuresText(rest)}`}`;
  // Judged as soon as there are enough calls: a bad canary is stopped within seconds, not a step.
  if (f.calls >= p.minCalls) {
    const why = breach(p, f, rest);
    if (why !== undefined) {
      const message = `rolled back at step ${step + 1} of ${steps}${of}: ${why} (${text}); "${p.version}" takes no calls. Change the version or spec.rollout to try again`;
      return rolledBack({ ...base, step, stepStartedAt: prev.stepStartedAt, ...seen }, message);
    }
  }
  if (!canaryReady && now - since > p.stepMs + WAIT_LIMIT_MS) {
    const message = `rolled back at step ${step + 1} of ${steps}${of}: version "${p.version}" has had no ready replica for ${WAIT_LIMIT_MS / 60_000} minutes past the step (${text}); change it or spec.rollout to try again`;
    return rolledBack({ ...base, step, stepStartedAt: prev.stepStartedAt, ...seen }, message);
  }
  if (now - since < p.stepMs || f.calls < p.minCalls) {
    const waiting =
      now - since >= p.stepMs
        ? `; waiting for ${p.minCalls} calls to judge it`
        : `; judged after ${Math.round(p.stepMs / 1000)} s`;
    return {
      status: {
        // What the policy no longer says (a cohort since removed) is not carried over.
        ...{ ...prev, cohort: undefined },
        ...base,
        ...seen,
        message: `step ${step + 1} of ${steps}: "${p.version}" ${takes(p, prev.weight ?? 0)} (${text})${waiting}${canaryReady ? '' : '; the canary has no ready replica'}`,
      },
      recheckMs: every,
    };
  }
  if (step + 1 >= steps) {
    const message = `promoted: "${p.version}" passed ${steps} step(s)${of} (last: ${text}) and is the default version now; to keep it so once the rollout is over, set spec.defaultVersion to "${p.version}" and remove spec.rollout in one edit`;
    return {
      status: { ...base, phase: 'Promoted', step, weight: 100, stepStartedAt: iso(now), ...seen, message },
      event: { type: 'Normal', reason: 'Promoted', message },
    };
  }
  const weight = p.steps[step + 1] ?? 100;
  const message = `step ${step + 2} of ${steps}: "${p.version}" ${takes(p, weight)} (step ${step + 1} passed: ${text})`;
  return {
    status: {
      ...base,
      phase: 'Progressing',
      step: step + 1,
      ...weightAt(p, weight),
      stepStartedAt: iso(now),
      calls: 0,
      errorRate: 0,
      message,
    },
    event: { type: 'Normal', reason: 'RolloutStep', message },
    recheckMs: every,
  };
}

/** The Rollout condition of a Model with spec.rollout. */
export function rolloutCondition(status: RolloutStatus): {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
} {
  return {
    type: 'Rollout',
    status: status.phase === 'Promoted' ? 'True' : status.phase === 'RolledBack' ? 'False' : 'Unknown',
    reason: status.phase,
    message: status.message ?? '',
  };
}
