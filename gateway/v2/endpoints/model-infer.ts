import { V2_DATATYPES } from '../../../common/model-settings/types.js';
import type { JsonSchema } from '../../api/route.js';
import { restAnswer } from '../answer-sink.js';
import { MODEL, type V2EndpointSpec } from '../endpoint.js';
import { restBody } from '../infer-body.js';

/** A V2 inference request's shape as the gateway checks it (gateway/v2/validate-infer.ts). */
const inferenceRequestSchema: JsonSchema = {
  type: 'object',
  required: ['inputs'],
  properties: {
    id: { type: 'string' },
    parameters: { type: 'object' },
    inputs: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['name', 'shape', 'datatype', 'data'],
        properties: {
          name: { type: 'string' },
          shape: { type: 'array', items: { type: 'integer', minimum: 0 } },
          datatype: { enum: [...V2_DATATYPES] },
          parameters: { type: 'object' },
          data: {},
        },
      },
    },
    outputs: {
      type: 'array',
      items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
    },
  },
};

/** POST /v2/models/<m>[/versions/<v>]/infer: checked against the metadata, then sent on. */
export const modelInfer: V2EndpointSpec = {
  name: 'model-infer',
  method: 'POST',
  path: ['models', MODEL, 'infer'],
  security: 'apikey',
  grpc: 'ModelInfer',
  underWorkflow: 'core',
  forModel: true,
  rest: async (ctx, req, res, { model, version, call }) => {
    const grant = await ctx.access.authenticate(req);
    const { runtime, perRow } = await ctx.access.authorised(grant, call, model, { version, split: true });
    await ctx.inference.infer(
      { head: req, model, runtime, grant, requestId: call.requestId, query: call.query, perRow },
      restBody(req),
      restAnswer(res, ctx.s.heldMemory, grant.owner),
    );
  },
  openapi: {
    operationId: 'v2Infer',
    summary: 'Inference; the request is checked against the model’s metadata first',
    body: { schema: inferenceRequestSchema, required: true },
    ok: { status: 200, description: 'The runtime’s answer', schema: { type: 'object' } },
    errors: [400, 401, 403, 404, 413, 415, 429, 502, 503, 504],
  },
};
