import type { FolderCheck } from '../../../common/model-settings/check-folder.js';
import { describeCohort } from '../../../common/resources/cohort.js';
import { formatProblems } from '../../../common/model-settings/check-folder.js';
import type { NameHolder } from './names.js';
import type { Model, ModelCondition, ModelPhase, ModelStatus } from '../../../common/resources/model.js';
import type { ServedVersion } from '../../../common/resources/model-versions.js';
import type { RuntimeState } from '../../serving/runtime-driver.js';
import { rolloutCondition, type RolloutStatus } from './rollout.js';

/** What the reconciler learned this time round; the status is a pure function of it. */
export type Observation =
  | { kind: 'storage-error'; reason: string; message: string }
  | {
      kind: 'settings';
      check: FolderCheck;
      runtime?: RuntimeState;
      /** Scaled to zero by the autoscaler: calls wait at the gateway while a replica starts. */
      cold?: boolean;
    };

type Cond = Omit<ModelCondition, 'lastTransitionTime' | 'observedGeneration'>;

/** A workload of a version no longer in the spec; `serving` while nothing of the spec serves yet. */
export interface DrainingVersion {
  name: string;
  serving: boolean;
}

/** One version of the Model and what was observed of it. */
export interface VersionResult {
  version: ServedVersion;
  obs: Observation;
}

interface Evaluated {
  phase: ModelPhase;
  settings: Cond;
  ready: Cond;
  fields: ModelStatus;
}

/** A version's phase, conditions and figures, from what was observed of it. */
function evaluate(obs: Observation): Evaluated {
  const fields: ModelStatus = {};
  if (obs.kind === 'storage-error') {
    return {
      phase: 'Failed',
      settings: { type: 'SettingsValid', status: 'False', reason: obs.reason, message: obs.message },
      ready: {
        type: 'Ready',
        status: 'False',
        reason: obs.reason,
        message: 'not deployed: the model folder could not be read',
      },
      fields,
    };
  }
  if (!obs.check.ok) {
    return {
      phase: 'Failed',
      settings: {
        type: 'SettingsValid',
        status: 'False',
        reason: 'SettingsInvalid',
        message: formatProblems(obs.check.problems),
      },
      ready: {
        type: 'Ready',
        status: 'False',
        reason: 'SettingsInvalid',
        message: 'not deployed until the model settings are fixed',
      },
      fields,
    };
  }
  const { check, runtime } = obs;
  const settings: Cond = {
    type: 'SettingsValid',
    status: 'True',
    reason: check.generated ? 'MlflowModel' : 'SettingsValid',
    message: check.generated
      ? `MLflow model: served with ${check.settings.implementation}`
      : `model-settings.json is valid (${check.settings.implementation}, content_type ${check.declared.contentType ?? 'unset'})`,
  };
  if (check.declared.contentType) fields.contentType = check.declared.contentType;
  fields.inputs = check.declared.inputs;
  fields.outputs = check.declared.outputs;
  if (runtime === undefined) {
    return {
      phase: 'Pending',
      settings,
      ready: { type: 'Ready', status: 'False', reason: 'Pending', message: 'waiting to deploy' },
      fields,
    };
  }
  fields.url = runtime.url;
  fields.replicas = runtime.replicas;
  fields.readyReplicas = runtime.readyReplicas;
  const counts = `${runtime.readyReplicas}/${runtime.replicas} replicas ready`;
  let phase: ModelPhase;
  let ready: Cond;
  if (runtime.failure) {
    phase = 'Failed';
    ready = {
      type: 'Ready',
      status: 'False',
      reason: runtime.failure.reason,
      message: `${counts}: ${runtime.failure.message}`,
    };
  } else if (runtime.replicas === 0 && obs.cold === true) {
    phase = 'Ready';
    ready = {
      type: 'Ready',
      status: 'True',
      reason: 'ScaledToZero',
      message: 'no replica after a while without calls; the next call waits while one starts',
    };
  } else if (runtime.replicas === 0) {
    phase = 'Pending';
    ready = {
      type: 'Ready',
      status: 'False',
      reason: 'ScaledToZero',
      message: 'spec.replicas is 0; nothing serves the model',
    };
  } else if (runtime.readyReplicas > 0) {
    phase = 'Ready';
    ready = {
      type: 'Ready',
      status: 'True',
      reason: runtime.rollingOut ? 'RollingOut' : 'Ready',
      message: runtime.rollingOut ? `${counts}; rolling out a new version` : counts,
    };
  } else {
    phase = 'Loading';
    ready = {
      type: 'Ready',
      status: 'False',
      reason: 'Loading',
      message: `${counts}; pulling and loading the model`,
    };
  }
  return { phase, settings, ready, fields };
}

/** A Model whose spec.versions break the CRD's rules (a standalone manifest the API server never saw). */
/**
 * Whether what the last accepted spec deployed still serves, for a status that leaves it running:
 * as the Ready condition last said (the phase is Failed once such a status is written).
 */
const stillServing = (model: Model): 'True' | 'False' =>
  model.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? 'True' : 'False';

export function invalidVersionsStatus(model: Model, message: string, now: Date): ModelStatus {
  const cond: Cond = { type: 'SettingsValid', status: 'False', reason: 'VersionsInvalid', message };
  const ready: Cond = {
    type: 'Ready',
    status: stillServing(model),
    reason: 'VersionsInvalid',
    message: 'still serving what the last valid spec deployed, until spec.versions is fixed',
  };
  return { ...model.status, phase: 'Failed', ...stamped(model, [cond, ready], now) };
}

/** A Model that asks for a sidecar where the webhook puts none: what runs stays as it was. */
export function sidecarUnavailableStatus(model: Model, message: string, now: Date): ModelStatus {
  const ready: Cond = {
    type: 'Ready',
    status: stillServing(model),
    reason: 'SidecarUnavailable',
    message,
  };
  return { ...model.status, phase: 'Failed', ...stamped(model, [ready], now) };
}

/**
 * A Model whose name an older Model in another namespace already serves: `/v2/models/<name>`,
 * its route and its grant audience name one model, so the later one is refused, not served.
 */
export function nameTakenStatus(model: Model, { keptUntil, remade }: NameHolder, now: Date): ModelStatus {
  const name = model.metadata.name;
  const unique = `a model's name is its V2 address across the cluster (/v2/models/${name}), so it must be unique`;
  // The holder is always in another namespace: another team's, which this one is not told.
  const message =
    keptUntil !== undefined
      ? `the name ${name} is kept until ${keptUntil.toISOString()} for the namespace whose Model of that name was deleted (a Model deleted and made again keeps its name): ${unique}; rename this Model, or wait`
      : remade === true
        ? `the name ${name} is served by a Model made again in the namespace that held the name: ${unique}; rename this Model`
        : `the name ${name} is served by an older Model in another namespace: ${unique}; rename this Model`;
  const ready: Cond = { type: 'Ready', status: 'False', reason: 'NameTaken', message };
  return { phase: 'Failed', ...stamped(model, [ready], now) };
}

/**
 * The Model's status: the default version's phase, conditions and figures at the top (the whole
 * status of a Model with one unnamed version), each version in `versions`, with the versions
 * removed from the spec that are still draining.
 */
export function desiredStatus(
  model: Model,
  results: VersionResult[],
  draining: DrainingVersion[],
  now: Date,
  rollout?: RolloutStatus,
): ModelStatus {
  const main = results.find((r) => r.version.isDefault) ?? results[0];
  if (main === undefined) throw new Error('a Model has at least one version');
  const top = evaluate(main.obs);
  const status: ModelStatus = { ...top.fields };
  let { settings, ready } = top;
  if (main.version.name !== undefined) {
    const label = (r: VersionResult) => `version "${r.version.name ?? ''}": `;
    const each = results.map((r) => ({ r, e: evaluate(r.obs) }));
    const broken = each.find(({ e }) => e.settings.status === 'False');
    settings = broken
      ? { ...broken.e.settings, message: label(broken.r) + broken.e.settings.message }
      : { ...settings, message: label(main) + settings.message };
    ready = { ...ready, message: label(main) + ready.message };
    status.defaultVersion = main.version.name;
    status.versions = [
      ...each.map(({ r, e }) => ({
        name: r.version.name ?? '',
        phase: e.phase,
        traffic: r.version.percent,
        ...(r.version.cohort === undefined ? {} : { cohort: describeCohort(r.version.cohort) }),
        ...(e.fields.replicas === undefined ? {} : { replicas: e.fields.replicas }),
        ...(e.fields.readyReplicas === undefined ? {} : { readyReplicas: e.fields.readyReplicas }),
        ...(e.fields.url === undefined ? {} : { url: e.fields.url }),
        message: e.phase === 'Failed' && e.settings.status === 'False' ? e.settings.message : e.ready.message,
      })),
      ...draining.map((d) => ({
        name: d.name,
        phase: 'Draining' as const,
        traffic: 0,
        message: d.serving
          ? 'replaced: still takes the calls until a version of spec.versions is ready, then drains'
          : 'removed from spec.versions: takes no new calls, and goes once its calls are done',
      })),
    ];
  }
  const conditions = rollout === undefined ? [settings, ready] : [settings, ready, rolloutCondition(rollout)];
  return {
    ...status,
    ...(rollout === undefined ? {} : { rollout }),
    phase: top.phase,
    ...stamped(model, conditions, now),
  };
}

/** observedGeneration, and each condition's lastTransitionTime kept while its status holds. */
function stamped(
  model: Model,
  conditions: Cond[],
  now: Date,
): Pick<ModelStatus, 'observedGeneration' | 'conditions'> {
  const generation = model.metadata.generation ?? 0;
  const old = model.status?.conditions ?? [];
  return {
    observedGeneration: generation,
    conditions: conditions.map((c) => {
      const prev = old.find((o) => o.type === c.type);
      const since =
        prev && prev.status === c.status
          ? prev.lastTransitionTime
          : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
      return { ...c, observedGeneration: generation, lastTransitionTime: since };
    }),
  };
}
