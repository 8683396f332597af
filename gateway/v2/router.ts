import type { IncomingMessage, ServerResponse } from 'node:http';
import { enterCall } from '../http/call-slot.js';
import { requestIdOf } from '../proxy/headers.js';
import type { NormalisedPath } from '../routing/normalise.js';
import type { V2Call, V2Context } from './endpoint.js';
import { health } from './endpoints/health.js';
import { modelInfer } from './endpoints/model-infer.js';
import { modelMetadata } from './endpoints/model-metadata.js';
import { modelReady } from './endpoints/model-ready.js';
import { listModels } from './endpoints/models.js';
import { repositoryIndex } from './endpoints/repository-index.js';
import { serverMetadata } from './endpoints/server-metadata.js';
import { matchV2 } from './paths.js';

/**
 * The V2 (Open Inference Protocol) endpoints on the gateway's root, one file each in endpoints/:
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
    const call: V2Call = {
      head: req,
      requestId,
      query: path.query,
      holdSlot: (grant) => enterCall(ctx.s.admission, grant, req, res),
    };
    const route = matchV2(path.segments);
    switch (route.endpoint) {
      case 'server':
        return serverMetadata(ctx, req, res, call);
      case 'health':
        return health(ctx, req, res, route.which);
      case 'models':
        return listModels(ctx, req, res, call);
      case 'repository-index':
        return repositoryIndex(ctx, req, res, call);
      default: {
        const target = { model: route.model, version: route.version, call };
        if (route.endpoint === 'model-metadata') return modelMetadata(ctx, req, res, target);
        if (route.endpoint === 'model-ready') return modelReady(ctx, req, res, target);
        return modelInfer(ctx, req, res, target);
      }
    }
  };
}
