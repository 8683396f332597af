import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/**
 * What describes a runtime's answer body: the only headers of it a V2 caller gets. A model's
 * runtime runs its team's code, and its answers reach every caller allowed the model, on the
 * gateway's own origin (the panel's): a cookie, HSTS, Clear-Site-Data or a Link of its choosing
 * must not. Nothing a V2 client reads is lost: the protocol's answers are their bodies.
 */
const DESCRIBE_THE_BODY = [
  'content-type',
  'content-length',
  'content-encoding',
  'inference-header-content-length',
];

export function runtimeAnswerHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const passed: OutgoingHttpHeaders = { 'x-content-type-options': 'nosniff' };
  for (const name of DESCRIBE_THE_BODY) {
    const value = headers[name];
    if (value !== undefined) passed[name] = value;
  }
  return passed;
}
