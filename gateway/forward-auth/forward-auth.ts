import type { IncomingMessage, ServerResponse } from 'node:http';
import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { enforce } from '../admission/admission.js';
import { noteRefusal } from '../auth/refusals.js';
import type { CallHead } from '../http/call-head.js';
import { enterCall } from '../http/call-slot.js';
import { toTollgateError, logFailure } from '../http/errors.js';
import { grantHeaders, requestIdOf } from '../proxy/headers.js';
import { refuseMethodOverride } from '../routing/method-override.js';
import { normalisePath, type NormalisedPath } from '../routing/normalise.js';
import { usageEndpoint } from '../routing/usage-endpoint.js';
import type { GatewayServices } from '../services.js';
import type { V2Context } from '../v2/endpoint.js';
import { matchV2 } from '../v2/paths.js';
import { methodNotAllowed } from '../v2/http.js';
import { allow, refuse, type AnswerStyle } from './answers.js';
import { originalRequest } from './original-request.js';

/**
 * Tollgate's decision for a call another proxy makes (Traefik's ForwardAuth, NGINX's
 * auth_request): the same key check, admission, limits, credits, usage and audit as a call the
 * gateway proxies itself, read from the original method and URI the proxy forwards. The original
 * URI is judged in Tollgate's own path layout (`/events/bda/<workflow>/<service>/...`,
 * `/events/platform/api/v1/<resource>`, `/v2/models/<model>/...`) by the same path check, which
 * refuses whatever two parsers could read differently (dot segments, encoded separators), so the
 * path Tollgate allows is the path the proxy routes.
 *
 * What needs the body is not available here: the V2 request checks, and `_method` fields in
 * platform bodies (the method-override headers and query are refused as on the gateway).
 */
export function createForwardAuthHandler(
  s: GatewayServices,
  v2: V2Context,
  style: AnswerStyle,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const requestId = requestIdOf(req);
    let module = 'none';
    decide(s, v2, req, res, requestId, (grant) => (module = grant.module))
      .then((grant) => allow(res, grantHeaders(grant), requestId))
      .catch((thrown: unknown) => {
        const err = toTollgateError(thrown);
        if (err.status >= 500) logFailure(s.log, err);
        if (err.status === 401) s.metrics.authFailure(err.code);
        res.setHeader('x-request-id', requestId);
        refuse(res, style, err);
      })
      .finally(() => s.metrics.request('forward_auth', res.statusCode, module));
  };
}

async function decide(
  s: GatewayServices,
  v2: V2Context,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  onGrant: (grant: KeyGrant) => void,
): Promise<KeyGrant> {
  const original = originalRequest(req.headers);
  // The call as the proxy received it: what the key check (client address), the audit trail and
  // the usage read of it.
  const head: CallHead = {
    method: original.method,
    url: original.uri,
    headers: req.headers,
    rawHeaders: req.rawHeaders,
    socket: req.socket,
  };
  const path = normalisePath(original.uri);
  const grant = await s.keys.check(head);
  onGrant(grant);
  if (path.segments[0] === 'v2') {
    await decideV2(s, v2, grant, head, path, requestId, () => enterCall(s.admission, grant, req, res));
    return grant;
  }
  if (path.segments[0] !== 'events') {
    throw new TollgateError(
      'unknown_endpoint',
      `Tollgate decides on /events/bda/<bda-id>/<service-id>/..., /events/platform/api/v1/<resource> and /v2/... calls, not ${path.segments[0] === undefined ? '/' : `/${path.segments[0]}`}`,
    );
  }
  try {
    if (path.segments[1] === 'platform') refuseMethodOverride(req.headers, path.query);
    const target = await s.events.resolve(original.method, path, grant);
    enterCall(s.admission, grant, req, res);
    await s.admission.spend(grant, target.cost ?? 1, usageEndpoint(original.method, path));
  } catch (err) {
    noteRefusal(s.refused, grant, err, head);
    throw err;
  }
  return grant;
}

/** A model's endpoints as /v2 judges them (its scope, its workflow and owner, its price), never woken. */
async function decideV2(
  s: GatewayServices,
  v2: V2Context,
  grant: KeyGrant,
  head: CallHead,
  path: NormalisedPath,
  requestId: string,
  holdSlot: () => void,
): Promise<void> {
  const route = matchV2(path.segments);
  if (route.spec.method !== head.method) throw methodNotAllowed(route.spec.method);
  if (route.model === undefined) {
    // The server's own endpoints and the listing: what any key that may call models may ask.
    try {
      enforce(s.admission.scope(grant, { kind: 'models' }));
      holdSlot();
      await s.admission.spend(grant, 1, `${route.spec.method} /${path.segments.join('/')}`);
    } catch (err) {
      noteRefusal(s.refused, grant, err, head);
      throw err;
    }
    return;
  }
  const call = { head, requestId, query: path.query, holdSlot };
  await v2.access.authorised(grant, call, route.model, {
    version: route.version,
    split: route.spec.method === 'POST',
    wake: false,
  });
}
