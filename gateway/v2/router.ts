import type { IncomingMessage, ServerResponse } from 'node:http';
import { enterCall } from '../http/call-slot.js';
import { requestIdOf } from '../proxy/headers.js';
import type { NormalisedPath } from '../routing/normalise.js';
import type { V2Call, V2Context } from './endpoint.js';
import { methodNotAllowed } from './http.js';
import { matchV2 } from './paths.js';

/**
 * The V2 (Open Inference Protocol) endpoints on the gateway's root, each declared in its own file
 * in endpoints/ (listed in endpoints/index.ts):
 *
 *   GET  /v2, /v2/health/live, /v2/health/ready  open
 *   GET  /v2/models                              the models this key may call, with readiness
 *   POST /v2/repository/index                    the same, as MLServer's and Triton's index
 *   GET  /v2/models/<m>                          metadata (served from the gateway's cache)
 *   GET  /v2/models/<m>/ready                    the runtime's readiness
 *   POST /v2/models/<m>/infer                    checked against the metadata, then sent on
 *
 * with `/versions/<v>` after `<m>` for one version. Model endpoints need a platform key whose roles
 * allow inference (`models:inference`, `editor`) or a bda key for the model's workflow (access.ts).
 * The same inference is reachable as a workflow service (the events router's inference target),
 * and over gRPC (gateway/grpc/), through the same core (core.ts).
 */
export type V2Handler = (req: IncomingMessage, res: ServerResponse, path: NormalisedPath) => Promise<void>;

export function createV2Handler(ctx: V2Context): V2Handler {
  return async (req, res, path) => {
    const requestId = requestIdOf(req);
    // Set once, here: every answer carries it, the runtime's own is dropped (answer-headers.ts).
    res.setHeader('x-request-id', requestId);
    const { spec, model, version } = matchV2(path.segments);
    if (req.method !== spec.method) throw methodNotAllowed(spec.method);
    const call: V2Call = {
      head: req,
      requestId,
      query: path.query,
      holdSlot: (grant) => enterCall(ctx.s.admission, grant, req, res),
    };
    if (!spec.forModel) return spec.rest(ctx, req, res, call);
    // A model endpoint's path always carries its model.
    return spec.rest(ctx, req, res, { model: model ?? '', version, call });
  };
}
