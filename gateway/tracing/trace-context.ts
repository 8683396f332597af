import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT, type Context } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * W3C Trace Context (`traceparent`, `tracestate`) in and out. Whose trace a call joins is the
 * caller's choice only when the caller is trusted (a proxy in front, or the central gateway in
 * front of a sidecar): anyone else could make every call sampled, or write the trace id that lands
 * in the gateway's logs and audit trail.
 */
const propagator = new W3CTraceContextPropagator();

const getter = {
  keys: (carrier: IncomingHttpHeaders): string[] => Object.keys(carrier),
  get: (carrier: IncomingHttpHeaders, key: string): string | string[] | undefined => carrier[key],
};

/** The context the caller's headers say the call continues; the root when they say none (or nothing valid). */
export function contextFromHeaders(headers: IncomingHttpHeaders): Context {
  if (headers.traceparent === undefined) return ROOT_CONTEXT;
  return propagator.extract(ROOT_CONTEXT, headers, getter);
}

/** `traceparent` (and `tracestate`) for a request made in `context`, as [name, value, ...]. */
export function traceHeaders(context: Context): string[] {
  const carrier: Record<string, string> = {};
  propagator.inject(context, carrier, {
    set: (c, key, value) => {
      c[key] = value;
    },
  });
  return Object.entries(carrier).flat();
}

/**
 * The headers of a request made for no sampled call (a model's metadata fetched for a call not
 * sampled, the gateway's own work), saying so, when they carry no trace context yet: the sidecar
 * behind would otherwise start a trace of its own, sampled at its own rate.
 */
export function withNotSampled(headers: string[]): string[] {
  for (let i = 0; i < headers.length; i += 2)
    if ((headers[i] as string).toLowerCase() === 'traceparent') return headers;
  return [
    ...headers,
    'traceparent',
    `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-00`,
  ];
}

/** The caller's own trace headers as it sent them, for a trusted caller's call when the gateway makes no span. */
export function passedTraceHeaders(headers: IncomingHttpHeaders): string[] {
  const out: string[] = [];
  for (const name of ['traceparent', 'tracestate'] as const) {
    const value = headers[name];
    if (typeof value === 'string') out.push(name, value);
  }
  return out;
}
