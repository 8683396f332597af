import type { RequestHandler } from 'express';
import type { Model } from '../../../common/resources/model.js';
import { readModelUsage } from '../../v2/model-usage.js';
import type { ManagementDeps } from '../deps.js';
import type { ModelView } from '../views.js';

/**
 * GET /models: the Models page. Every Model with its phase, replicas, the condition that says
 * what to fix, its declared tensors, its calls over the last hour (every gateway replica's, from
 * Redis), and an example request built from its inputs, ready to paste.
 */
export function listModels(deps: ManagementDeps): RequestHandler {
  return async (_req, res) => {
    const models = (await deps.models.list()).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    const usage = await readModelUsage(
      deps.redis,
      models.map((m) => m.metadata.name),
    );
    res.json({ items: models.map((m) => toModelView(m, usage.get(m.metadata.name) ?? [])) });
  };
}

function toModelView(model: Model, perMinute: ModelView['perMinute']): ModelView {
  const { status, spec } = model;
  const problem = status?.conditions?.find((c) => c.status === 'False' && c.message !== '');
  const inputs = status?.inputs ?? [];
  return {
    name: model.metadata.name,
    ...(spec.workflow === undefined ? {} : { workflow: spec.workflow }),
    storageUri: spec.storageUri,
    phase: status?.phase ?? 'Pending',
    replicas: spec.replicas ?? 1,
    readyReplicas: status?.readyReplicas ?? 0,
    ...(problem === undefined ? {} : { message: `${problem.reason}: ${problem.message}` }),
    inputs,
    outputs: status?.outputs ?? [],
    // One version until versions exist: the model's current one.
    versions: [{ name: 'default', traffic: 100 }],
    perMinute,
    ...exampleRequest(inputs),
  };
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
