import type { IncomingHttpHeaders } from 'node:http';
import {
  Server,
  ServerCredentials,
  status as Status,
  type sendUnaryData,
  type ServerUnaryCall,
} from '@grpc/grpc-js';
import type { TollgateError } from '../../common/errors.js';
import type { Release } from '../admission/call-shares.js';
import { errorHeaders, logFailure, toTollgateError } from '../http/errors.js';
import { peerAddress } from '../grpc/peer.js';
import { grantHeaders, requestIdOf } from '../proxy/headers.js';
import type { GatewayServices } from '../services.js';
import type { V2Context } from '../v2/endpoint.js';
import { decide, type AskedCall } from './decision.js';
import {
  authorizationService,
  OVERWRITE_IF_EXISTS_OR_ADD,
  type CheckRequest,
  type CheckResponse,
  type HeaderValueOption,
} from './ext-authz-protocol.js';
import { checkedMethod, checkedTarget } from './original-request.js';
import { runAsCall } from '../../common/tracing/call-trace.js';
import { traceGrpcCall } from '../tracing/grpc-call.js';

type HttpAttributes = NonNullable<NonNullable<NonNullable<CheckRequest['attributes']>['request']>['http']>;

/** gRPC's word for each refusal (Envoy denies on any status but OK; the HTTP answer is in the response). */
const GRPC_CODE: Readonly<Record<number, number>> = {
  400: Status.INVALID_ARGUMENT,
  401: Status.UNAUTHENTICATED,
  404: Status.NOT_FOUND,
  429: Status.RESOURCE_EXHAUSTED,
  503: Status.UNAVAILABLE,
};

const option = (key: string, value: string): HeaderValueOption => ({
  header: { key, value },
  append_action: OVERWRITE_IF_EXISTS_OR_ADD,
});

/**
 * Envoy's ext_authz over gRPC (`envoy.service.auth.v3.Authorization/Check`, on the gateway's
 * extAuthzPort): the decision (decision.ts) for the HTTP call a CheckRequest describes. Allowed,
 * Envoy sends the call on with the grant's headers in place of the client's and without the key;
 * refused, Envoy answers the client with Tollgate's status, JSON body and headers.
 *
 * The client's address is the CheckRequest's source address when the caller is a trusted proxy
 * (trustedProxies/trustedProxyCidrs, as X-Forwarded-For is believed), the caller's own otherwise.
 */
export class ExtAuthzServer {
  private readonly server = new Server({ 'grpc.max_receive_message_length': 1 << 20 });

  constructor(
    private readonly s: GatewayServices,
    private readonly v2: V2Context,
  ) {
    this.server.addService(authorizationService(), { Check: this.check });
  }

  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
      this.server.bindAsync(address, ServerCredentials.createInsecure(), (err, bound) =>
        err === null ? resolve(bound) : reject(err),
      );
    });
  }

  shutdown(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const deadline = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, timeoutMs);
      this.server.tryShutdown(() => {
        clearTimeout(deadline);
        resolve();
      });
    });
  }

  private readonly check = (
    call: ServerUnaryCall<CheckRequest, CheckResponse>,
    answer: sendUnaryData<CheckResponse>,
  ): void => {
    const http = call.request.attributes?.request?.http ?? null;
    const peer = peerAddress(call.getPeer());
    if (http === null || peer === undefined) {
      answer({
        code: Status.INVALID_ARGUMENT,
        details:
          http === null
            ? 'the CheckRequest describes no HTTP call (attributes.request.http): Tollgate decides on HTTP calls'
            : 'the caller has no address',
      });
      return;
    }
    const headers = headersOf(http);
    const { s } = this;
    const requestId = requestIdOf({ headers, rawHeaders: [], socket: {} });
    let release: Release | undefined;
    let module = 'none';
    let status = 200;
    // Envoy's own trace context comes in the check's metadata (its tracing on); the original
    // request's headers in the message are the client's, whatever it wrote, and never a parent.
    const context: Record<string, string> = {};
    for (const name of ['traceparent', 'tracestate']) {
      const [value] = call.metadata.get(name);
      if (typeof value === 'string') context[name] = value;
    }
    const trace = traceGrpcCall(
      s.tracing?.tracer,
      { headers: context, rawHeaders: [], socket: { remoteAddress: peer } },
      '/envoy.service.auth.v3.Authorization/Check',
      s.proxies,
    );
    Promise.resolve()
      .then(() => {
        const asked: AskedCall = {
          head: {
            method: checkedMethod(http.method),
            url: checkedTarget(http.path),
            headers: withoutForwardedFor(headers),
            rawHeaders: rawOf(headers),
            socket: { remoteAddress: this.clientOf(peer, call.request) },
          },
          requestId,
          hold: (grant) => (release = s.admission.enter(grant)),
        };
        return runAsCall(trace, () => decide(s, this.v2, asked, (grant) => (module = grant.module)));
      })
      .then(
        (grant): CheckResponse => {
          const set = grantHeaders(grant);
          const headersToSet: HeaderValueOption[] = [];
          for (let i = 0; i < set.length; i += 2)
            headersToSet.push(option(set[i] as string, set[i + 1] as string));
          headersToSet.push(option('x-request-id', requestId));
          // The key never goes on (a client's X-Tollgate-* headers were refused: decision.ts).
          const remove = ['authorization'];
          return {
            status: { code: Status.OK, message: '' },
            ok_response: { headers: headersToSet, headers_to_remove: remove },
          };
        },
        (thrown: unknown): CheckResponse => {
          const err = toTollgateError(thrown);
          if (err.status >= 500) logFailure(s.log, err);
          if (err.status === 401) s.metrics.authFailure(err.code);
          status = err.status;
          trace?.refused(err.code);
          return denied(err, requestId);
        },
      )
      .then((response) => {
        release?.();
        trace?.end(status);
        s.metrics.request('forward_auth', status, module);
        answer(null, response);
      })
      .catch((err: unknown) => {
        release?.();
        trace?.end(500, 'internal_error');
        s.log.error({ err }, 'ext_authz check not answered');
        answer({ code: Status.INTERNAL, details: 'internal_error' });
      });
  };

  private clientOf(peer: string, request: CheckRequest): string {
    const source = request.attributes?.source?.address?.socket_address?.address;
    const trust = this.s.proxies;
    const trusted = trust.hops > 0 && trust.proxies.allows(peer);
    return trusted && source !== undefined && peerAddress(source) !== undefined ? source : peer;
  }
}

function denied(err: TollgateError, requestId: string): CheckResponse {
  const headers = Object.entries({ ...errorHeaders(err), 'x-request-id': requestId }).map(([k, v]) =>
    option(k, v),
  );
  return {
    status: { code: GRPC_CODE[err.status] ?? Status.PERMISSION_DENIED, message: err.code },
    denied_response: { status: { code: err.status }, headers, body: JSON.stringify(err.toJSON()) },
  };
}

/** The call's headers as Node would hold them: names in lower case, repeats kept apart for the checks that count them. */
function headersOf(http: HttpAttributes): IncomingHttpHeaders {
  // No prototype: a header named `constructor` or `__proto__` is a header like any other.
  const out = Object.create(null) as Record<string, string | string[]>;
  const add = (key: string, value: string): void => {
    const name = key.toLowerCase();
    // Envoy's pseudo-headers (:path, :method, :authority) are the call's, read from their fields.
    if (name.startsWith(':')) return;
    const had = out[name];
    out[name] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  };
  const listed = http.header_map?.headers ?? [];
  if (listed.length > 0) {
    for (const h of listed) add(h.key, h.raw_value.length > 0 ? h.raw_value.toString('latin1') : h.value);
  } else {
    for (const [key, value] of Object.entries(http.headers)) add(key, value);
  }
  if (out['host'] === undefined && http.host !== '') out['host'] = http.host;
  return out as IncomingHttpHeaders;
}

function rawOf(headers: IncomingHttpHeaders): string[] {
  const raw: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    for (const v of Array.isArray(value) ? value : [value ?? '']) raw.push(name, v);
  }
  return raw;
}

/** The client's address comes from the CheckRequest's source, never from a header it could write. */
function withoutForwardedFor(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { 'x-forwarded-for': _xff, ...rest } = headers;
  return rest;
}
