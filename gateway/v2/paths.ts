import { unknownEndpoint } from './http.js';

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
