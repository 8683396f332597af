import type { IncomingHttpHeaders } from 'node:http';
import type { Metadata } from '@grpc/grpc-js';
import type { CallHead } from '../http/call-head.js';

/**
 * The call metadata the core reads, as headers: the credentials, the request id, the trace, the
 * client's name, and the forwarded address (believed only from a trusted proxy, as REST's:
 * http/client-address.ts). Nothing else a caller sends is read or passed on (a grant header above
 * all: only the central gateway's REST calls carry one).
 */
const PASSED = [
  'authorization',
  'x-request-id',
  'traceparent',
  'tracestate',
  'x-forwarded-for',
  'user-agent',
];

/** A gRPC call as the key check, the audit trail and the runtime's headers read it. */
export function grpcCallHead(
  metadata: Metadata,
  address: string,
  method: 'GET' | 'POST',
  url: string,
): CallHead {
  const headers: IncomingHttpHeaders = { 'user-agent': 'grpc' };
  const rawHeaders: string[] = [];
  for (const name of PASSED) {
    const values = metadata.get(name).filter((v): v is string => typeof v === 'string');
    const [first] = values;
    if (first === undefined) continue;
    headers[name] = first;
    // Every value: two keys in one call are seen (and refused) as two Authorization headers are.
    for (const value of values) rawHeaders.push(name, value);
  }
  if (metadata.get('user-agent').length === 0) rawHeaders.push('user-agent', 'grpc');
  return { method, url, headers, rawHeaders, socket: { remoteAddress: address } };
}
