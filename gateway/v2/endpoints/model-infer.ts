import type { ModelTarget, V2Endpoint } from '../endpoint.js';
import { expectMethod } from '../http.js';

/** POST /v2/models/<m>[/versions/<v>]/infer: checked against the metadata, then sent on. */
export const modelInfer: V2Endpoint<ModelTarget> = async (
  ctx,
  req,
  res,
  { model, version, requestId, query },
) => {
  expectMethod(req, 'POST');
  const { grant, runtime } = await ctx.access.authorised(req, res, model, { version, split: true });
  await ctx.inference.infer(req, res, { model, runtime, grant, requestId, query });
};
