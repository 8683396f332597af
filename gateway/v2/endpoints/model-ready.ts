import type { KeyGrant } from '../../../common/resources/grant.js';
import type { ModelTarget, V2Context, V2Endpoint } from '../endpoint.js';
import { expectMethod, sendJson } from '../http.js';

/** Whether a model (or version) the grant may call is ready; asking never wakes a model. */
export async function modelReadiness(
  ctx: V2Context,
  grant: KeyGrant,
  { model, version, call }: ModelTarget,
): Promise<boolean> {
  const runtime = await ctx.access.authorised(grant, call, model, { version, split: false, wake: false });
  // At zero it is ready all the same: a call is held while a replica starts.
  return (
    runtime.cold === true ||
    ctx.runtimes.ready(call.head, { grant, requestId: call.requestId, runtime }, model)
  );
}

/** GET /v2/models/<m>[/versions/<v>]/ready: the runtime's readiness. */
export const modelReady: V2Endpoint<ModelTarget> = async (ctx, req, res, target) => {
  expectMethod(req, 'GET');
  const ready = await modelReadiness(ctx, await ctx.access.authenticate(req), target);
  const { model, version } = target;
  sendJson(res, ready ? 200 : 503, { name: model, ...(version === undefined ? {} : { version }), ready });
};
