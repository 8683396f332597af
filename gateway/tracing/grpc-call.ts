import { SpanKind, type Tracer } from '@opentelemetry/api';
import { CallTrace } from '../../common/tracing/call-trace.js';
import type { CallHead } from '../http/call-head.js';
import { clientAddress, type ProxyTrust } from '../http/client-address.js';
import { trustedParent } from './http-call.js';

/**
 * The server span of one gRPC call (OpenTelemetry's RPC conventions: named for its full method),
 * or none when tracing is off. Its `traceparent` metadata is believed from a trusted proxy only,
 * as REST's header is.
 */
export function traceGrpcCall(
  tracer: Tracer | undefined,
  head: CallHead,
  path: string,
  proxies: ProxyTrust,
): CallTrace | undefined {
  if (tracer === undefined) return undefined;
  const method = path.replace(/^\//, '');
  const call = new CallTrace(tracer, method, SpanKind.SERVER, trustedParent(head, proxies));
  const client = clientAddress(head, proxies);
  call.set({
    'rpc.system.name': 'grpc',
    'rpc.method': method,
    'network.peer.address': head.socket.remoteAddress ?? '',
    ...(client === undefined ? {} : { 'client.address': client }),
  });
  // Its parent is settled as it comes: its log lines carry its ids from the start.
  return call.begin();
}
