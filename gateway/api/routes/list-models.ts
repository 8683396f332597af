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
    ...(inputs.length === 0 ? {} : { exampleRequest: exampleRequest(inputs) }),
  };
}

/** A request the model accepts: each input with its declared shape (any size -1 as 1), zeros or "text". */
function exampleRequest(inputs: NonNullable<ModelView['inputs']>): ModelView['exampleRequest'] {
  return {
    inputs: inputs.map((input) => {
      const shape = input.shape.map((d) => (d < 0 ? 1 : d));
      const count = shape.reduce((a, b) => a * b, 1);
      const bytes = input.datatype === 'BYTES';
      return {
        name: input.name,
        datatype: input.datatype,
        shape,
        data: Array.from({ length: Math.min(count, 64) }, () =>
          bytes ? 'text' : input.datatype === 'BOOL' ? false : 0,
        ),
        ...(bytes ? { parameters: { content_type: 'str' } } : {}),
      };
    }),
  };
}
