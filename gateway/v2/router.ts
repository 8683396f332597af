import type { IncomingMessage, ServerResponse } from 'node:http';
import { requestIdOf } from '../proxy/headers.js';
import type { NormalisedPath } from '../routing/normalise.js';
import type { GatewayServices } from '../services.js';
import { centralPlacement, ModelAccess, type V2Placement } from './access.js';
import type { ModelTarget, V2Context } from './endpoint.js';
import { health } from './endpoints/health.js';
import { modelInfer } from './endpoints/model-infer.js';
import { modelMetadata } from './endpoints/model-metadata.js';
import { modelReady } from './endpoints/model-ready.js';
import { listModels } from './endpoints/models.js';
import { repositoryIndex } from './endpoints/repository-index.js';
import { serverMetadata } from './endpoints/server-metadata.js';
import { unknownEndpoint } from './http.js';
import { Inference } from './inference.js';
import type { ModelDirectory } from './model-directory.js';
import { RuntimeClient } from './runtime-client.js';

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
 * through the same Inference service.
 */
export type V2Handler = (req: IncomingMessage, res: ServerResponse, path: NormalisedPath) => Promise<void>;

/** Which V2 endpoint a path names. */
export type V2Route =
  | { endpoint: 'server' }
  | { endpoint: 'health'; which: 'live' | 'ready' }
  | { endpoint: 'models' }
  | { endpoint: 'repository-index' }
  | {
      endpoint: 'model-metadata' | 'model-ready' | 'model-infer';
      model: string;
      version: string | undefined;
    };

/** `segments[0]` is "v2"; 404 unknown_endpoint for a path that names no endpoint. */
export function matchV2(segments: readonly string[]): V2Route {
  const [, area, model, action, ...rest] = segments;
  if (area === undefined) return { endpoint: 'server' };
  if (area === 'health' && (model === 'live' || model === 'ready') && action === undefined)
    return { endpoint: 'health', which: model };
  if (area === 'models' && model === undefined) return { endpoint: 'models' };
  if (area === 'repository' && model === 'index' && action === undefined)
    return { endpoint: 'repository-index' };
  if (area !== 'models' || model === undefined) throw unknownEndpoint();
  // /v2/models/<m>/versions/<v>[/ready|/infer] names a version; the same without it, the model.
  let version: string | undefined;
  let verb = action;
  if (action === 'versions') {
    [version, verb] = rest;
    if (version === undefined || version === '' || rest.length > 2) throw unknownEndpoint();
  } else if (rest.length > 0) {
    throw unknownEndpoint();
  }
  if (verb === undefined) return { endpoint: 'model-metadata', model, version };
  if (verb === 'ready') return { endpoint: 'model-ready', model, version };
  if (verb === 'infer') return { endpoint: 'model-infer', model, version };
  throw unknownEndpoint(
    `no such V2 endpoint for a model: /v2/models/${model}/${action ?? ''}${version === undefined ? '' : `/${version}/${verb}`}`,
  );
}

export function createV2Handler(
  s: GatewayServices,
  models: ModelDirectory,
  placement: V2Placement = centralPlacement(s),
): V2Handler {
  const runtimes = new RuntimeClient(s);
  const ctx: V2Context = {
    s,
    access: new ModelAccess(s, models, placement),
    inference: new Inference(s, runtimes),
    runtimes,
  };
  return async (req, res, path) => {
    const requestId = requestIdOf(req);
    // Set once, here: every answer carries it, the runtime's own is dropped (clientResponseHeaders).
    res.setHeader('x-request-id', requestId);
    const route = matchV2(path.segments);
    switch (route.endpoint) {
      case 'server':
        return serverMetadata(ctx, req, res, undefined);
      case 'health':
        return health(ctx, req, res, route.which);
      case 'models':
        return listModels(ctx, req, res, undefined);
      case 'repository-index':
        return repositoryIndex(ctx, req, res, undefined);
      default: {
        const target: ModelTarget = {
          model: route.model,
          version: route.version,
          requestId,
          query: path.query,
        };
        if (route.endpoint === 'model-metadata') return modelMetadata(ctx, req, res, target);
        if (route.endpoint === 'model-ready') return modelReady(ctx, req, res, target);
        return modelInfer(ctx, req, res, target);
      }
    }
  };
}
