import type { IncomingMessage, ServerResponse } from 'node:http';
import { enterCall } from '../http/call-slot.js';
import { logFailure, toTollgateError } from '../http/errors.js';
import { grantHeaders, requestIdOf } from '../proxy/headers.js';
import type { GatewayServices } from '../services.js';
import type { V2Context } from '../v2/endpoint.js';
import { allow, refuse, type AnswerStyle } from './answers.js';
import { decide } from './decision.js';
import { originalRequest } from './original-request.js';

/**
 * `/auth/forward` and `/auth/request`: the decision (decision.ts) for a proxy that asks over
 * HTTP with the original call's head, its method and URI in the forwarded headers
 * (original-request.ts), answered in the proxy's style (answers.ts).
 */
export function createForwardAuthHandler(
  s: GatewayServices,
  v2: V2Context,
  style: AnswerStyle,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const requestId = requestIdOf(req);
    let module = 'none';
    Promise.resolve()
      .then(() => {
        const { method, uri } = originalRequest(req.headers);
        const head = {
          method,
          url: uri,
          headers: req.headers,
          rawHeaders: req.rawHeaders,
          socket: req.socket,
        };
        const hold = (grant: Parameters<typeof enterCall>[1]): void =>
          enterCall(s.admission, grant, req, res);
        return decide(s, v2, { head, requestId, hold }, (grant) => (module = grant.module));
      })
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
