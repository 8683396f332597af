import type { IncomingHttpHeaders } from 'node:http';
import { TollgateError } from '../../common/errors.js';

/**
 * The call a proxy asks about, from the headers it adds to its authorization request. Traefik's
 * ForwardAuth (as Caddy's forward_auth and oauth2-proxy) sends X-Forwarded-Method and
 * X-Forwarded-Uri; NGINX's auth_request sends what its configuration sets, by the convention of
 * its documentation X-Original-Method and X-Original-URI (ingress-nginx: X-Original-URL, a whole
 * URL). Both the method and the target are required: a subrequest's own method and path are the
 * authorization endpoint's, and judging a PUT as the GET its subrequest is would let a read-only
 * key write.
 */
export interface OriginalRequest {
  method: string;
  /** The request target as the client sent it: path and query, still percent-encoded. */
  uri: string;
}

// An HTTP token, upper case as every method a proxy forwards; a header repeated (Node joins the
// values with ", ") is no token.
const METHOD = /^[A-Z]{1,16}$/;
// An origin-form target: no whitespace or control characters (a client's target never has them).
const TARGET = /^\/[\x21-\x7e]*$/;
// The path of an absolute URL without parsing it: a URL parser resolves dot segments, which must
// reach the path check as sent.
const ABSOLUTE = /^https?:\/\/[^/?#\s]*([/?][\x21-\x7e]*)?$/i;

const HOW =
  'send the original request with X-Forwarded-Method and X-Forwarded-Uri (Traefik, Caddy) or X-Original-Method and X-Original-URI (NGINX: proxy_set_header X-Original-URI $request_uri; proxy_set_header X-Original-Method $request_method)';

function one(headers: IncomingHttpHeaders, names: readonly string[], what: string): string | undefined {
  let found: { name: string; value: string } | undefined;
  for (const name of names) {
    const value = headers[name];
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(', ') : value;
    if (found !== undefined && found.value !== text) {
      throw new TollgateError(
        'conflicting_original_request',
        `the request names two different ${what}s (${found.name} and ${name}); the proxy sends one`,
      );
    }
    found ??= { name, value: text };
  }
  return found?.value;
}

export function originalRequest(headers: IncomingHttpHeaders): OriginalRequest {
  const method = one(headers, ['x-forwarded-method', 'x-original-method'], 'method');
  if (method === undefined) {
    throw new TollgateError('missing_original_request', `no original method given: ${HOW}`);
  }
  const uri = targetOf(headers);
  if (uri === undefined) {
    throw new TollgateError('missing_original_request', `no original URI given: ${HOW}`);
  }
  return { method: checkedMethod(method), uri: checkedTarget(uri) };
}

/** One HTTP method, as every proxy forwards it. */
export function checkedMethod(method: string): string {
  if (METHOD.test(method)) return method;
  throw new TollgateError(
    'invalid_request',
    'the original method is not one HTTP method in upper case (GET, POST, ...)',
    { field: 'x-forwarded-method' },
  );
}

/** A request target as a client sends it, before the path check reads it. */
export function checkedTarget(uri: string): string {
  if (TARGET.test(uri)) return uri;
  throw new TollgateError(
    'invalid_request',
    'the original URI is not a request path: it starts with "/" and holds no spaces or control characters',
    { field: 'x-forwarded-uri' },
  );
}

function targetOf(headers: IncomingHttpHeaders): string | undefined {
  const target = one(headers, ['x-forwarded-uri', 'x-original-uri'], 'URI');
  const url = one(headers, ['x-original-url'], 'URL');
  const fromUrl = url === undefined ? undefined : pathOf(url);
  if (target !== undefined && fromUrl !== undefined && target !== fromUrl) {
    throw new TollgateError(
      'conflicting_original_request',
      'the request names two different URIs (X-Original-URL and X-Forwarded-Uri or X-Original-URI); the proxy sends one',
    );
  }
  return target ?? fromUrl;
}

function pathOf(url: string): string {
  const match = ABSOLUTE.exec(url);
  if (match === null) {
    throw new TollgateError('invalid_request', 'X-Original-URL is not an http or https URL', {
      field: 'x-original-url',
    });
  }
  const rest = match[1] ?? '/';
  return rest.startsWith('?') ? `/${rest}` : rest;
}
