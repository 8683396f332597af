import { createHash } from 'node:crypto';
import type { VersionFigures } from '../../../common/redis/version-figures.js';
import type { ModelSpec, ModelStatus } from '../../../common/resources/model.js';
import { defaultVersionOf } from '../../../common/resources/model-versions.js';

/**
 * Automatic canary analysis (spec.rollout), as Flagger and Argo Rollouts do it but judged on the
 * gateways' own per-version figures (common/redis/version-figures.ts): the canary takes each
 * step's share of the calls; a step passes once it ran `stepSeconds` with at least `minCalls`
 * calls within the bounds; the last step passed promotes the canary (it becomes the default), and
 * any bound crossed rolls it back (it takes no calls). The state lives in status.rollout, never in
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
}

function policyOf(rollout: Rollout): Policy {
  return {
    version: rollout.version,
    steps: rollout.steps ?? [...ROLLOUT_DEFAULTS.steps],
    stepMs: (rollout.stepSeconds ?? ROLLOUT_DEFAULTS.stepSeconds) * 1000,
    minCalls: rollout.minCalls ?? ROLLOUT_DEFAULTS.minCalls,
    maxErrorRate: rollout.maxErrorRate ?? ROLLOUT_DEFAULTS.maxErrorRate,
    maxLatencyMs: rollout.maxLatencyMs,
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
    return { ...spec, traffic: [{ version: spec.rollout.version, percent: current.weight ?? 0 }] };
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

/** The canary's figures over a step, as status.rollout shows them. */
function judged(f: VersionFigures): Pick<RolloutStatus, 'calls' | 'errorRate' | 'p95LatencyMs'> {
  return {
    calls: f.calls,
    errorRate: f.calls === 0 ? 0 : Math.round((f.failures / f.calls) * 10000) / 10000,
    ...(f.p95LatencyMs === undefined || !Number.isFinite(f.p95LatencyMs)
      ? {}
      : { p95LatencyMs: f.p95LatencyMs }),
  };
}

/** The end of a rollout that failed: the canary takes no calls, and an Event says why. */
function rolledBack(status: Omit<RolloutStatus, 'phase' | 'weight'>, message: string): RolloutStep {
  return {
    status: { ...status, phase: 'RolledBack', weight: 0, message },
    event: { type: 'Warning', reason: 'RolledBack', message },
  };
}

/**
 * One look at the rollout: where it stands now, given where it stood, whether the canary has a
 * ready replica, and its figures since the step began (`figures` is asked only while a step runs).
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
  const base = { version: p.version, revision, policy };
  const every = checkEveryMs(spec);
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
    return {
      status: {
        ...base,
        phase: 'Progressing',
        step: 0,
        weight: p.steps[0] ?? 100,
        stepStartedAt: iso(now),
        calls: 0,
        errorRate: 0,
        message: `step 1 of ${p.steps.length}: "${p.version}" takes ${p.steps[0] ?? 100}% of the calls`,
      },
      event: {
        type: 'Normal',
        reason: 'RolloutStarted',
        message: `canary "${p.version}" takes ${p.steps[0] ?? 100}% of the calls (step 1 of ${p.steps.length})`,
      },
      recheckMs: every,
    };
  }
  const step = prev.step ?? 0;
  const since = Date.parse(prev.stepStartedAt ?? iso(now));
  const f = await figures(p.version, since, now);
  const seen = judged(f);
  const rate = f.calls === 0 ? 0 : f.failures / f.calls;
  const figuresText = `${f.calls} calls, ${percent(rate)} failed${seen.p95LatencyMs === undefined ? '' : `, p95 ≤ ${seen.p95LatencyMs} ms`}`;
  // Judged as soon as there are enough calls: a bad canary is stopped within seconds, not a step.
  if (f.calls >= p.minCalls) {
    const why =
      rate > p.maxErrorRate
        ? `its error rate ${percent(rate)} is above spec.rollout.maxErrorRate ${percent(p.maxErrorRate)}`
        : p.maxLatencyMs !== undefined && (f.p95LatencyMs ?? 0) > p.maxLatencyMs
          ? `its p95 latency (≤ ${f.p95LatencyMs} ms) is above spec.rollout.maxLatencyMs ${p.maxLatencyMs} ms`
          : undefined;
    if (why !== undefined) {
      const message = `rolled back at step ${step + 1} of ${p.steps.length}: ${why} (${figuresText}); "${p.version}" takes no calls. Change the version or spec.rollout to try again`;
      return rolledBack({ ...base, step, stepStartedAt: prev.stepStartedAt, ...seen }, message);
    }
  }
  if (!canaryReady && now - since > p.stepMs + WAIT_LIMIT_MS) {
    const message = `rolled back at step ${step + 1} of ${p.steps.length}: version "${p.version}" has had no ready replica for ${WAIT_LIMIT_MS / 60_000} minutes past the step (${figuresText}); change it or spec.rollout to try again`;
    return rolledBack({ ...base, step, stepStartedAt: prev.stepStartedAt, ...seen }, message);
  }
  if (now - since < p.stepMs || f.calls < p.minCalls) {
    const waiting =
      now - since >= p.stepMs
        ? `; waiting for ${p.minCalls} calls to judge it`
        : `; judged after ${Math.round(p.stepMs / 1000)} s`;
    return {
      status: {
        ...prev,
        ...base,
        ...seen,
        message: `step ${step + 1} of ${p.steps.length}: "${p.version}" takes ${prev.weight ?? 0}% of the calls (${figuresText})${waiting}${canaryReady ? '' : '; the canary has no ready replica'}`,
      },
      recheckMs: every,
    };
  }
  if (step + 1 >= p.steps.length) {
    const message = `promoted: "${p.version}" passed ${p.steps.length} step(s) (last: ${figuresText}) and is the default version now; to keep it so once the rollout is over, set spec.defaultVersion to "${p.version}" and remove spec.rollout in one edit`;
    return {
      status: { ...base, phase: 'Promoted', step, weight: 100, stepStartedAt: iso(now), ...seen, message },
      event: { type: 'Normal', reason: 'Promoted', message },
    };
  }
  const weight = p.steps[step + 1] ?? 100;
  const message = `step ${step + 2} of ${p.steps.length}: "${p.version}" takes ${weight}% of the calls (step ${step + 1} passed: ${figuresText})`;
  return {
    status: {
      ...base,
      phase: 'Progressing',
      step: step + 1,
      weight,
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
