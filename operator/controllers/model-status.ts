import type { FolderCheck } from '../../common/model-settings/check-folder.js';
import { formatProblems } from '../../common/model-settings/check-folder.js';
import type { Model, ModelCondition, ModelPhase, ModelStatus } from '../../common/resources/model.js';
import type { RuntimeState } from '../serving/runtime-driver.js';

/** What the reconciler learned this time round; the status is a pure function of it. */
export type Observation =
  | { kind: 'storage-error'; reason: string; message: string }
  | { kind: 'settings'; check: FolderCheck; runtime?: RuntimeState };

type Cond = Omit<ModelCondition, 'lastTransitionTime' | 'observedGeneration'>;

export function desiredStatus(model: Model, obs: Observation, now: Date): ModelStatus {
  const generation = model.metadata.generation ?? 0;
  let phase: ModelPhase;
  let settings: Cond;
  let ready: Cond;
  const status: ModelStatus = {};
  if (obs.kind === 'storage-error') {
    phase = 'Failed';
    settings = { type: 'SettingsValid', status: 'False', reason: obs.reason, message: obs.message };
    ready = {
      type: 'Ready',
      status: 'False',
      reason: obs.reason,
      message: 'not deployed: the model folder could not be read',
    };
  } else if (!obs.check.ok) {
    phase = 'Failed';
    settings = {
      type: 'SettingsValid',
      status: 'False',
      reason: 'SettingsInvalid',
      message: formatProblems(obs.check.problems),
    };
    ready = {
      type: 'Ready',
      status: 'False',
      reason: 'SettingsInvalid',
      message: 'not deployed until the model settings are fixed',
    };
  } else {
    const { check, runtime } = obs;
    settings = {
      type: 'SettingsValid',
      status: 'True',
      reason: check.generated ? 'MlflowModel' : 'SettingsValid',
      message: check.generated
        ? `MLflow model: served with ${check.settings.implementation}`
        : `model-settings.json is valid (${check.settings.implementation}, content_type ${check.declared.contentType ?? 'unset'})`,
    };
    if (check.declared.contentType) status.contentType = check.declared.contentType;
    status.inputs = check.declared.inputs;
    status.outputs = check.declared.outputs;
    if (runtime === undefined) {
      phase = 'Pending';
      ready = { type: 'Ready', status: 'False', reason: 'Pending', message: 'waiting to deploy' };
    } else {
      status.url = runtime.url;
      status.replicas = runtime.replicas;
      status.readyReplicas = runtime.readyReplicas;
      const counts = `${runtime.readyReplicas}/${runtime.replicas} replicas ready`;
      if (runtime.failure) {
        phase = 'Failed';
        ready = {
          type: 'Ready',
          status: 'False',
          reason: runtime.failure.reason,
          message: `${counts}: ${runtime.failure.message}`,
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
    }
  }
  const old = model.status?.conditions ?? [];
  status.phase = phase;
  status.observedGeneration = generation;
  status.conditions = [settings, ready].map((c) => {
    const prev = old.find((o) => o.type === c.type);
    const since =
      prev && prev.status === c.status
        ? prev.lastTransitionTime
        : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
    return { ...c, observedGeneration: generation, lastTransitionTime: since };
  });
  return status;
}

/** Field order and absent fields do not matter: the API server returns its own order. */
export function sameStatus(a: ModelStatus | undefined, b: ModelStatus): boolean {
  return canonical(a ?? {}) === canonical(b);
}

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, val: unknown) =>
    val && typeof val === 'object' && !Array.isArray(val)
      ? Object.fromEntries(
          Object.entries(val as Record<string, unknown>)
            .filter(([, x]) => x !== undefined)
            .sort(([x], [y]) => x.localeCompare(y)),
        )
      : val,
  );
}
