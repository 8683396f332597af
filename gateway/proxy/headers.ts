import { randomUUID } from 'node:crypto';
import type { CallHead } from '../http/call-head.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import type { ProxyTrust } from '../http/client-address.js';
import { countedUpstream } from '../auth/signed-grant.js';
import { currentCall } from '../../common/tracing/call-trace.js';
import { passedTraceHeaders } from '../tracing/trace-context.js';
import { unsampledTraceHeaders } from '../tracing/http-call.js';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** A caller's X-Request-Id is kept when it is a sane token, so traces join up; else a new one. */
export function requestIdOf(req: CallHead): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Which headers cross the proxy. Hop-by-hop headers belong to one connection and never do; the
 * caller's credentials never go upstream; every `X-Tollgate-*` header is the gateway's alone (the
 * grant headers today, any added later), so a caller can forge none of them.
 */
const GATEWAY_PREFIX = 'x-tollgate-';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
]);

/** Never forwarded upstream (beyond hop-by-hop): replaced by the gateway or meaningless there. */
const REQUEST_DROPPED = new Set([
  ...HOP_BY_HOP,
  'authorization',
  'host',
  'expect',
  'x-request-id',
  'x-forwarded-for',
  // How the client came in: said by the gateway, or by a proxy it trusts (below), never by a
  // caller that reached it directly; upstreams building URLs, choosing routes or trusting client
  // addresses from them would follow the caller.
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'forwarded',
  'x-real-ip',
  'true-client-ip',
  'x-client-ip',
  'x-original-url',
  'x-rewrite-url',
  // Whose trace the upstream's spans join: the gateway's own call (tracing on), or a trusted
  // caller's as it came (below); never the word of a caller that reached the gateway directly.
  'traceparent',
  'tracestate',
]);

/** Header names a `Connection` header lists are hop-by-hop for this one message. */
function connectionListed(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  const joined = Array.isArray(value) ? value.join(',') : value;
  if (joined === 'keep-alive' || joined === 'close') return undefined;
  return new Set(joined.split(',').map((t) => t.trim().toLowerCase()));
}

/** The upstream request's headers as a flat [name, value, ...] list (undici's cheapest form). */
export function upstreamRequestHeaders(
  req: CallHead,
  grant: KeyGrant,
  requestId: string,
  proxies: ProxyTrust,
): string[] {
  const raw = req.rawHeaders;
  const listed = connectionListed(req.headers.connection);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const lower = name.toLowerCase();
    if (
      REQUEST_DROPPED.has(lower) ||
      lower.startsWith(GATEWAY_PREFIX) ||
      listed?.has(lower) === true ||
      // Servers that turn header names into CGI variables (Puma, Unicorn, WEBrick, Gunicorn) read
      // `X_Tollgate_Roles` as `X-Tollgate-Roles` and `X_HTTP_Method_Override` as the override
      // header: as nginx does, no name with an underscore is passed on.
      lower.includes('_')
    ) {
      continue;
    }
    out.push(name, raw[i + 1] as string);
  }
  const peer = req.socket.remoteAddress ?? '';
  // Who is believed about the client: a proxy in front the gateway trusts, or the central gateway
  // in front of a sidecar (its grant verified). Anyone else's word is replaced.
  const trusted = countedUpstream(grant) || (proxies.hops > 0 && proxies.proxies.allows(peer));
  const forwardedFor = trusted ? firstValue(req.headers['x-forwarded-for']) : undefined;
  // With tracing on, the request's own span says it (tracing/upstream-span.ts); a call not sampled
  // says so; with tracing off, a trusted caller's word goes on as it came.
  if (currentCall() === undefined) {
    const unsampled = unsampledTraceHeaders(req);
    if (unsampled !== undefined) out.push(...unsampled);
    else if (trusted) out.push(...passedTraceHeaders(req.headers));
  }
  out.push(
    'x-request-id',
    requestId,
    'x-forwarded-for',
    forwardedFor === undefined ? peer : `${forwardedFor}, ${peer}`,
    ...grantHeaders(grant),
  );
  const proto = trusted ? firstValue(req.headers['x-forwarded-proto']) : undefined;
  const host = (trusted ? firstValue(req.headers['x-forwarded-host']) : undefined) ?? req.headers.host;
  out.push('x-forwarded-proto', proto ?? 'http');
  if (host !== undefined) out.push('x-forwarded-host', host);
  return out;
}

/**
 * What an upstream learns of the caller, as [name, value, ...]: the key's id, module and roles,
 * never the key. The same whether the gateway proxies the call or a proxy in front asked Tollgate
 * (forward-auth/) and sets them on the call it sends.
 */
export function grantHeaders(grant: KeyGrant): string[] {
  return [
    'x-tollgate-key-id',
    grant.id,
    'x-tollgate-module',
    grant.module,
    'x-tollgate-roles',
    grant.roles.join(','),
  ];
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The upstream response's headers for the client as a flat [name, value, ...] list, hop-by-hop
 * ones removed and the request id added.
 */
export function clientResponseHeaderList(raw: Buffer[] | string[] | null, requestId: string): string[] {
  const out: string[] = [];
  if (raw !== null) {
    let listed: Set<string> | undefined;
    for (let i = 0; i < raw.length; i += 2) {
      const name = (raw[i] as Buffer | string).toString('latin1');
      const lower = name.toLowerCase();
      const value = (raw[i + 1] as Buffer | string).toString('latin1');
      if (lower === 'connection') listed = connectionListed(value);
      if (HOP_BY_HOP.has(lower) || lower === 'x-request-id') continue;
      out.push(name, value);
    }
    if (listed !== undefined) {
      for (let i = out.length - 2; i >= 0; i -= 2) {
        if (listed.has((out[i] as string).toLowerCase())) out.splice(i, 2);
      }
    }
  }
  out.push('x-request-id', requestId);
  return out;
}
