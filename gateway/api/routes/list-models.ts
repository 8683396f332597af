import type { RequestHandler } from 'express';
import type { Model } from '../../../common/resources/model.js';
import { modelAccount } from '../../../common/resources/grant.js';
import { describeCohort } from '../../../common/resources/cohort.js';
import { defaultVersionOf, servedVersions } from '../../../common/resources/model-versions.js';
import { readModelUsage, type ModelUsage } from '../../v2/model-usage.js';
import type { ManagementDeps } from '../deps.js';
import type { ModelView } from '../views.js';
import { modelPageSchema } from '../views.js';
import type { ManagementRoute } from '../route.js';

/**
 * GET /models: the Models page. Every Model with its phase, replicas, the condition that says
 * what to fix, its declared tensors, its calls over the last hour (every gateway replica's, from
 * Redis), and an example request built from its inputs, ready to paste.
 */
function listModels(deps: ManagementDeps): RequestHandler {
  return async (_req, res) => {
    const models = (await deps.models.list()).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    // Each Model's own records, by its namespace, name and uid: a name held before (by another
    // team, or by an earlier Model of this one's) shows none of those calls.
    const accountOf = (m: Model) =>
      modelAccount(m.metadata.namespace ?? 'default', m.metadata.name, m.metadata.uid);
    const usage = await readModelUsage(deps.redis, models.map(accountOf));
    res.json({ items: models.map((m) => toModelView(m, usage.get(accountOf(m)))) });
  };
}

function toModelView(model: Model, usage: ModelUsage | undefined): ModelView {
  const { status, spec } = model;
  const rollout = status?.rollout;
  const problem = status?.conditions?.find((c) => c.status === 'False' && c.message !== '');
  const inputs = status?.inputs ?? [];
  // The one the operator serves (a promoted canary), else the spec's.
  const defaultName =
    spec.versions === undefined ? undefined : (status?.defaultVersion ?? defaultVersionOf(spec));
  return {
    name: model.metadata.name,
    ...(spec.workflow === undefined ? {} : { workflow: spec.workflow }),
    storageUri: spec.storageUri ?? spec.versions?.find((v) => v.name === defaultName)?.storageUri ?? '',
    phase: status?.phase ?? 'Pending',
    replicas: spec.replicas ?? 1,
    readyReplicas: status?.readyReplicas ?? 0,
    ...(problem === undefined ? {} : { message: `${problem.reason}: ${problem.message}` }),
    inputs,
    outputs: status?.outputs ?? [],
    ...(defaultName === undefined ? {} : { defaultVersion: defaultName }),
    versions: versionsOf(model),
    perMinute: usage?.perMinute ?? [],
    ...(spec.shadow === undefined
      ? {}
      : {
          shadow: {
            version: spec.shadow.version,
            percent: spec.shadow.percent ?? 100,
            ...(usage?.shadow ?? {
              calls: 0,
              agreed: 0,
              failed: 0,
              agreementRate: null,
              meanLatencyMs: 0,
              servingMeanLatencyMs: 0,
            }),
          },
        }),
    ...(rollout === undefined || spec.rollout === undefined
      ? {}
      : {
          rollout: {
            version: rollout.version,
            phase: rollout.phase,
            weight: rollout.weight ?? 0,
            ...(rollout.cohort === undefined ? {} : { cohort: rollout.cohort }),
            ...(rollout.message === undefined ? {} : { message: rollout.message }),
          },
        }),
    ...exampleRequest(inputs),
  };
}

/** The versions of the spec with what the status says of each, then the ones still draining. */
function versionsOf(model: Model): ModelView['versions'] {
  const { spec, status } = model;
  if (spec.versions === undefined) {
    return [
      {
        name: '',
        traffic: 100,
        phase: status?.phase ?? 'Pending',
        readyReplicas: status?.readyReplicas ?? 0,
        ...(spec.storageUri === undefined ? {} : { storageUri: spec.storageUri }),
      },
    ];
  }
  const reported = new Map((status?.versions ?? []).map((v) => [v.name, v]));
  const listed = servedVersions(model.metadata.name, spec).map((v) => {
    const seen = reported.get(v.name ?? '');
    return {
      name: v.name ?? '',
      // What the operator serves now (a rollout moves it), else what the spec asks.
      traffic: seen?.traffic ?? v.percent,
      ...cohortOf(seen?.cohort ?? (v.cohort === undefined ? undefined : describeCohort(v.cohort))),
      phase: seen?.phase ?? 'Pending',
      readyReplicas: seen?.readyReplicas ?? 0,
      storageUri: v.storageUri,
    };
  });
  const draining = (status?.versions ?? [])
    .filter((v) => v.phase === 'Draining')
    .map((v) => ({ name: v.name, traffic: 0, phase: v.phase, readyReplicas: v.readyReplicas ?? 0 }));
  return [...listed, ...draining];
}

/** Inputs larger than this get no example: a call of that size is not something to paste. */
const MAX_EXAMPLE_VALUES = 4096;

/**
 * A request the model accepts: each input with its declared shape (a size of -1 as 1), zeros, false
 * or "text". None when the model declares no inputs, or they are too large to paste.
 */
function exampleRequest(inputs: ModelView['inputs']): Pick<ModelView, 'exampleRequest'> {
  if (inputs.length === 0) return {};
  const built = inputs.map((input) => {
    const shape = input.shape.map((d) => (d < 0 ? 1 : d));
    const count = shape.reduce((a, b) => a * b, 1);
    const bytes = input.datatype === 'BYTES';
    const value = bytes ? 'text' : input.datatype === 'BOOL' ? false : 0;
    return {
      name: input.name,
      datatype: input.datatype,
      shape,
      data: count <= MAX_EXAMPLE_VALUES ? Array.from({ length: count }, () => value) : [],
      ...(bytes ? { parameters: { content_type: 'str' } } : {}),
    };
  });
  const values = built.reduce((n, b) => n + b.shape.reduce((a, c) => a * c, 1), 0);
  return values > MAX_EXAMPLE_VALUES ? {} : { exampleRequest: { inputs: built } };
}

export const listModelsRoute: ManagementRoute = {
  method: 'get',
  path: '/models',
  operationId: 'listModels',
  summary: 'The Models: phase, replicas, what to fix, tensors, calls over the last hour, an example request',
  ok: { status: 200, description: 'Every Model', schema: modelPageSchema },
  errors: [401, 503],
  handler: listModels,
};

const cohortOf = (cohort: string | undefined): { cohort?: string } =>
  cohort === undefined ? {} : { cohort };
