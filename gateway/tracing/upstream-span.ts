import { ROOT_CONTEXT, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { currentCall, SpanKind, type CallTrace } from '../../common/tracing/call-trace.js';
import { traceHeaders } from './trace-context.js';

/**
 * The client span of one request to an upstream (a workflow's service, a model's runtime, a
 * sidecar in front of either), a child of the call it is made for; its `traceparent` goes with the
 * request, so the upstream's spans (a sidecar's, a runtime's) join the call's trace. The time to the
 * answer's head is also the call's `tollgate.upstream.duration_ms`.
 */
export class UpstreamSpan {
  private readonly began = performance.now();

  private constructor(
    private readonly call: CallTrace,
    private readonly span: Span,
  ) {}

  /** The span for a request the current call makes, or none when tracing is off. */
  static start(method: string, origin: string, path: string): UpstreamSpan | undefined {
    const call = currentCall();
    if (call === undefined) return undefined;
    const url = new URL(origin);
    return new UpstreamSpan(
      call,
      call.child(method, SpanKind.CLIENT, {
        'http.request.method': method,
        'server.address': url.hostname,
        'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
        'url.full': `${url.origin}${path.split('?', 1)[0] ?? ''}`,
      }),
    );
  }

  /** The request's headers with this span's trace context. */
  headers(list: string[]): string[] {
    return [...list, ...traceHeaders(trace.setSpan(ROOT_CONTEXT, this.span))];
  }

  /** The answer's head came. */
  answered(status: number): void {
    this.span.setAttribute('http.response.status_code', status);
    if (status >= 500) {
      this.span.setAttribute('error.type', String(status));
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    // Its caller's ALS context may be gone by now (undici's callbacks): the call was kept.
    this.call.set({
      'tollgate.upstream.duration_ms': Math.round((performance.now() - this.began) * 1000) / 1000,
    });
  }

  /** The request is over; `failure`: the error code it failed with. */
  end(failure?: string): void {
    if (failure !== undefined) {
      this.span.setAttribute('error.type', failure);
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.span.end();
  }
}
