import type { IncomingMessage, ServerResponse } from 'node:http';
import { ROOT_CONTEXT, SpanKind, type Context, type Tracer } from '@opentelemetry/api';
import { CallTrace } from '../../common/tracing/call-trace.js';
import type { CallHead } from '../http/call-head.js';
import { clientAddress, type ProxyTrust } from '../http/client-address.js';
import { contextFromHeaders, traceHeaders } from './trace-context.js';

/** The calls of answers still open, so the one place that answers errors (http/errors.ts) can say which refusal ended each. */
const calls = new WeakMap<ServerResponse, CallTrace>();
/** The trace context of the calls not sampled, by request. */
const unsampled = new WeakMap<CallHead, string[]>();

/** What a sender's `traceparent` is worth: the call's parent when it is a proxy the gateway trusts. */
export function trustedParent(req: CallHead, proxies: ProxyTrust): Context {
  const peer = req.socket.remoteAddress ?? '';
  return proxies.hops > 0 && proxies.proxies.allows(peer) ? contextFromHeaders(req.headers) : ROOT_CONTEXT;
}

const UNMATCHED = '/{unmatched}';
/** The management API's resources (gateway/api/routes/), and the gateway's own paths. */
const API_RESOURCES = new Set([
  'admin',
  'apikeys',
  'audit',
  'identities',
  'leaked-keys',
  'me',
  'models',
  'modules',
  'webhooks',
]);
const OWN_PATHS = new Set(['panel', 'healthz', 'readyz', 'metrics', 'openapi.json']);
const V2_OWN = new Set(['/v2', '/v2/health/live', '/v2/health/ready', '/v2/models', '/v2/repository/index']);
const MODEL_TAILS = new Set(['', '/infer', '/ready']);

/**
 * The route template a path is counted under (`http.route`, the span's name): one of a known few,
 * never a workflow's, model's or resource's name nor anything else a caller writes (a path the
 * gateway has no route for is `/{unmatched}`), so names stay few whatever is sent.
 */
export function routeOf(segments: readonly string[]): string {
  const [first, second] = segments;
  if (first === 'events' && second === 'bda') return '/events/bda/{workflow}/{service}/*';
  if (first === 'events' && second === 'platform') return '/events/platform/api/v1/{resource}/*';
  if (first === 'auth') return second === 'forward' || second === 'request' ? `/auth/${second}` : UNMATCHED;
  if (first === 'v2') {
    const own = `/${segments.join('/')}`;
    if (V2_OWN.has(own)) return own;
    if (second !== 'models' || segments.length < 3) return UNMATCHED;
    const versioned = segments[3] === 'versions' && segments.length >= 5;
    const tail = segments.slice(versioned ? 5 : 3).join('/');
    const end = tail === '' ? '' : `/${tail}`;
    return MODEL_TAILS.has(end)
      ? `/v2/models/{model}${versioned ? '/versions/{version}' : ''}${end}`
      : UNMATCHED;
  }
  if (first === 'api' && second === 'v1' && API_RESOURCES.has(segments[2] ?? ''))
    return `/api/v1/${segments[2] ?? ''}/*`;
  if (first === undefined) return '/';
  return OWN_PATHS.has(first) ? `/${first}` : UNMATCHED;
}

/**
 * The server span of one HTTP call: started where the call arrives (gateway/server.ts), ended when
 * it ends with its status and, for a refusal, its code; the parent is what the trusted sender says
 * (a sidecar's call carrying a grant may adopt the central gateway's once the grant is verified:
 * `parentLater`). A call whose parent is settled and that is not sampled gets no span the rest of
 * its way, so 1% sampling costs the other 99% of calls one sampling decision: its upstream requests
 * still say "not sampled", so the services behind make no trace of their own for it.
 */
export function traceHttpCall(
  tracer: Tracer,
  req: IncomingMessage,
  res: ServerResponse,
  segments: readonly string[],
  proxies: ProxyTrust,
  parentLater: boolean,
): CallTrace | undefined {
  const method = req.method ?? 'GET';
  const route = routeOf(segments);
  const call = new CallTrace(tracer, `${method} ${route}`, SpanKind.SERVER, trustedParent(req, proxies));
  if (!parentLater && !call.recording()) {
    unsampled.set(req, traceHeaders(call.context()));
    return undefined;
  }
  const client = clientAddress(req, proxies);
  call.set({
    'http.request.method': method,
    'http.route': route,
    'url.path': (req.url ?? '/').split('?', 1)[0] ?? '/',
    'url.scheme': 'http',
    'network.protocol.version': req.httpVersion,
    'network.peer.address': req.socket.remoteAddress ?? '',
    ...(client === undefined ? {} : { 'client.address': client }),
    ...(typeof req.headers['user-agent'] === 'string'
      ? { 'user_agent.original': req.headers['user-agent'].slice(0, 256) }
      : {}),
  });
  calls.set(res, call);
  return call;
}

/** The refusal or failure a call was answered with: its code ends up on its span (tollgate.decision). */
export function noteAnswerCode(res: ServerResponse, code: string): void {
  calls.get(res)?.refused(code);
}

/**
 * The trace headers of a call that is not sampled, for its upstream requests: the decision goes on
 * with them (proxy/headers.ts).
 */
export function unsampledTraceHeaders(req: CallHead): string[] | undefined {
  return unsampled.get(req);
}
