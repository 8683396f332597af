import type { ModelTarget, V2Endpoint } from '../endpoint.js';
import { expectMethod, sendJson } from '../http.js';

/** GET /v2/models/<m>[/versions/<v>]/ready: the runtime's readiness; asking never wakes a model. */
export const modelReady: V2Endpoint<ModelTarget> = async (ctx, req, res, { model, version, requestId }) => {
  expectMethod(req, 'GET');
  const { grant, runtime } = await ctx.access.authorised(req, res, model, {
    version,
    split: false,
    wake: false,
  });
  // At zero it is ready all the same: a call is held while a replica starts.
  const ready =
    runtime.cold === true || (await ctx.runtimes.ready(req, { grant, requestId, runtime }, model));
  sendJson(res, ready ? 200 : 503, { name: model, ...(version === undefined ? {} : { version }), ready });
};
