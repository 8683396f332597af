import { restAnswer } from '../answer-sink.js';
import type { ModelTarget, V2Endpoint } from '../endpoint.js';
import { expectMethod } from '../http.js';
import { restBody } from '../infer-body.js';

/** POST /v2/models/<m>[/versions/<v>]/infer: checked against the metadata, then sent on. */
export const modelInfer: V2Endpoint<ModelTarget> = async (ctx, req, res, { model, version, call }) => {
  expectMethod(req, 'POST');
  const grant = await ctx.access.authenticate(req);
  const runtime = await ctx.access.authorised(grant, call, model, { version, split: true });
  await ctx.inference.infer(
    { head: req, model, runtime, grant, requestId: call.requestId, query: call.query },
    restBody(req),
    restAnswer(res, ctx.s.heldMemory, grant.owner),
  );
};
