import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KeyGrant } from '../../common/resources/grant.js';
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
    const refused = (thrown: unknown): void => {
      const err = toTollgateError(thrown);
      // Failed while the answer was being written: the only honest signal left is a reset.
      if (res.headersSent) {
        logFailure(s.log, err);
        res.destroy();
        return;
      }
      if (err.status >= 500) logFailure(s.log, err);
      if (err.status === 401) s.metrics.authFailure(err.code);
      res.setHeader('x-request-id', requestId);
      refuse(res, style, err);
      s.metrics.request('forward_auth', res.statusCode, module);
    };
    const allowed = (grant: KeyGrant): void => {
      allow(res, grantHeaders(grant), requestId);
      s.metrics.request('forward_auth', 200, module);
    };
    let decided: KeyGrant | Promise<KeyGrant>;
    try {
      const { method, uri } = originalRequest(req.headers);
      const head = { method, url: uri, headers: req.headers, rawHeaders: req.rawHeaders, socket: req.socket };
      const hold = (grant: KeyGrant): void => enterCall(s.admission, grant, req, res);
      decided = decide(s, v2, { head, requestId, hold }, (grant) => (module = grant.module));
    } catch (err) {
      refused(err);
      return;
    }
    if (decided instanceof Promise) decided.then(allowed, refused).catch(refused);
    else allowed(decided);
  };
}
