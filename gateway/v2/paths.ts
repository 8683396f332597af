import { TollgateError } from '../../common/errors.js';
import { MODEL, type V2EndpointSpec } from './endpoint.js';
import { V2_ENDPOINTS } from './endpoints/index.js';

/** The endpoint a V2 path names, with the model and version it carries. */
export interface V2Match {
  spec: V2EndpointSpec;
  model?: string;
  version?: string;
}

/** An endpoint as a caller writes it: `GET /v2/models/<model>[/versions/<version>]/ready`. */
export function endpointText(spec: V2EndpointSpec, base = '/v2', model = '<model>'): string {
  const path = spec.path.map((s) => (s === MODEL ? `${model}[/versions/<version>]` : s));
  return `${spec.method} ${[base, ...path].join('/')}`;
}

const unknownEndpoint = (message: string): TollgateError => new TollgateError('unknown_endpoint', message);

const EVERY_ENDPOINT = `no such V2 endpoint: ${V2_ENDPOINTS.map((e) => endpointText(e)).join(', ')}`;

const same = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((s, i) => s === b[i]);

/**
 * The endpoint `segments` names (`segments[0]` is "v2"), by the paths the endpoints declare; 404
 * unknown_endpoint, saying what it could have been, for a path that names none.
 */
export function matchV2(segments: readonly string[]): V2Match {
  const rest = segments.slice(1);
  let forModel: { path: string; after: string } | undefined;
  for (const spec of V2_ENDPOINTS) {
    const at = spec.path.indexOf(MODEL);
    if (at < 0) {
      if (same(rest, spec.path)) return { spec };
      continue;
    }
    const model = rest[at];
    if (model === undefined || !same(rest.slice(0, at), spec.path.slice(0, at))) continue;
    // <model>/versions/<version>/... names a version; the same without it, the model.
    let after = rest.slice(at + 1);
    let version: string | undefined;
    if (after[0] === 'versions') {
      version = after[1];
      if (version === undefined || version === '') continue;
      after = after.slice(2);
    }
    if (same(after, spec.path.slice(at + 1)))
      return { spec, model, ...(version === undefined ? {} : { version }) };
    if (after.length === 1) {
      const base = [...rest.slice(0, at + 1), ...(version === undefined ? [] : ['versions', version])];
      forModel = { path: `/v2/${base.join('/')}`, after: after[0] as string };
    }
  }
  if (forModel !== undefined)
    throw unknownEndpoint(`no such V2 endpoint for a model: ${forModel.path}/${forModel.after}`);
  throw unknownEndpoint(EVERY_ENDPOINT);
}
