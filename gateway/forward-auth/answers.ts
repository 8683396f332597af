import type { ServerResponse } from 'node:http';
import type { TollgateError } from '../../common/errors.js';
import { errorHeaders, sendError } from '../http/errors.js';

/**
 * How a proxy takes Tollgate's answer. `forward` (Traefik's ForwardAuth, Caddy's forward_auth,
 * Envoy's HTTP ext_authz): a 2xx lets the call through with the answer's grant headers; any other
 * answer goes to the client as it is, so a refusal is Tollgate's own status, code and message.
 * `request` (NGINX's auth_request): only 401 and 403 are refusals there (any other status is a
 * 500, and the body is dropped), so every refusal but a 401 is a 403, and each carries Tollgate's
 * status in X-Tollgate-Status and its body in X-Tollgate-Error, which the configuration
 * (examples/forward-auth/nginx) answers the client with.
 */
export type AnswerStyle = 'forward' | 'request';

export const ANSWER_STYLES: Readonly<Record<string, AnswerStyle>> = {
  forward: 'forward',
  request: 'request',
};

/** The grant headers for the call the proxy sends on; no body. */
export function allow(res: ServerResponse, headers: readonly string[], requestId: string): void {
  res.writeHead(200, [...headers, 'x-request-id', requestId, 'content-length', '0']);
  res.end();
}

export function refuse(res: ServerResponse, style: AnswerStyle, err: TollgateError): void {
  if (style === 'forward') {
    sendError(res, err);
    return;
  }
  const body = JSON.stringify(err.toJSON());
  const headers = errorHeaders(err);
  // A header is ASCII: what is not is escaped as JSON allows, so the client's body parses the same.
  headers['x-tollgate-error'] = body.replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  headers['x-tollgate-status'] = String(err.status);
  headers['content-length'] = String(Buffer.byteLength(body));
  res.writeHead(err.status === 401 ? 401 : 403, headers);
  res.end(body);
}
