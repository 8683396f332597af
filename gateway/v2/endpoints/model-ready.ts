import type { KeyGrant } from '../../../common/resources/grant.js';
import { MODEL, type ModelTarget, type V2Context, type V2EndpointSpec } from '../endpoint.js';
import { sendJson } from '../http.js';

/** Whether a model (or version) the grant may call is ready; asking never wakes a model. */
export async function modelReadiness(
  ctx: V2Context,
  grant: KeyGrant,
  { model, version, call }: ModelTarget,
): Promise<boolean> {
  const { runtime } = await ctx.access.authorised(grant, call, model, { version, split: false, wake: false });
  // At zero it is ready all the same: a call is held while a replica starts.
  return (
    runtime.cold === true ||
    ctx.runtimes.ready(call.head, { grant, requestId: call.requestId, runtime }, model)
  );
}

/** GET /v2/models/<m>[/versions/<v>]/ready: the runtime's readiness. */
export const modelReady: V2EndpointSpec = {
  name: 'model-ready',
  method: 'GET',
  path: ['models', MODEL, 'ready'],
  security: 'apikey',
  grpc: 'ModelReady',
  underWorkflow: 'runtime',
  forModel: true,
  rest: async (ctx, req, res, target) => {
    const ready = await modelReadiness(ctx, await ctx.access.authenticate(req), target);
    const { model, version } = target;
    sendJson(res, ready ? 200 : 503, { name: model, ...(version === undefined ? {} : { version }), ready });
  },
};
