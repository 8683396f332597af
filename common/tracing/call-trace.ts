import { AsyncLocalStorage } from 'node:async_hooks';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

/**
 * One call's span, made when it is first needed rather than when the call arrives: a model's
 * sidecar learns who sent a call (the central gateway, whose trace it joins, or anyone else) only
 * once the call's grant is verified, and a span's parent cannot change once it exists. Until then
 * its attributes wait here; its start is the call's arrival whenever it is made.
 */
export class CallTrace {
  private span: Span | undefined;
  private readonly attributes: Attributes = {};
  private readonly startTime = Date.now();
  private ended = false;
  private refusal: string | undefined;

  constructor(
    private readonly tracer: Tracer,
    private name: string,
    private readonly kind: SpanKind,
    private parent: Context,
  ) {}

  /** The context the call continues (an edge's, or the central gateway's); too late once its span exists. */
  adopt(parent: Context): void {
    if (this.span !== undefined) return;
    this.parent = parent;
    this.made();
  }

  /** Makes the span now: its parent is settled, and what follows (its log lines) carries its ids. */
  begin(): this {
    this.made();
    return this;
  }

  set(attributes: Attributes): void {
    if (this.span !== undefined) this.span.setAttributes(attributes);
    else Object.assign(this.attributes, attributes);
  }

  rename(name: string): void {
    if (this.span !== undefined) this.span.updateName(name);
    else this.name = name;
  }

  /** The call's context, its span made now if it was not yet: what its child spans and headers carry. */
  context(): Context {
    return trace.setSpan(this.parent, this.made());
  }

  /** Whether the call's span is sampled (it is made now, with its parent as it stands). */
  recording(): boolean {
    return this.made().isRecording();
  }

  /** The ids a log line, an audit event or a payload-log record carries. */
  ids(): { traceId: string; spanId: string; sampled: boolean } {
    const c = this.made().spanContext();
    return { traceId: c.traceId, spanId: c.spanId, sampled: (c.traceFlags & 1) === 1 };
  }

  /** The ids, when the span exists already (nothing is made for asking). */
  idsIfMade(): { traceId: string; spanId: string; sampled: boolean } | undefined {
    return this.span === undefined ? undefined : this.ids();
  }

  /** A child span of this call (a Redis round trip, the upstream, a wake from zero). */
  child(name: string, kind: SpanKind, attributes: Attributes): Span {
    return this.tracer.startSpan(name, { kind, attributes }, this.context());
  }

  /** The code of the refusal or failure the call was answered with (the gateway's, not its upstream's). */
  refused(code: string): void {
    this.refusal = code;
  }

  /**
   * Ends the call's span: `tollgate.decision` is `allowed` or the refusal's code; `status`, the
   * answer's (an upstream's own 4xx is still an allowed call).
   */
  end(status: number | undefined, failure?: string): void {
    if (this.ended) return;
    this.ended = true;
    const error = this.refusal ?? failure;
    const span = this.made();
    if (this.kind === SpanKind.SERVER) span.setAttribute('tollgate.decision', error ?? 'allowed');
    if (status !== undefined) span.setAttribute('http.response.status_code', status);
    if (error !== undefined) span.setAttribute('error.type', error);
    else if (status !== undefined && status >= 500) span.setAttribute('error.type', String(status));
    // A server span is in error for a 5xx only (the semantic conventions): a refusal is the
    // gateway doing its job, and says so in tollgate.decision.
    if ((status !== undefined && status >= 500) || (status === undefined && error !== undefined))
      span.setStatus({ code: SpanStatusCode.ERROR, ...(error === undefined ? {} : { message: error }) });
    span.end();
  }

  private made(): Span {
    this.span ??= this.tracer.startSpan(
      this.name,
      { kind: this.kind, attributes: this.attributes, startTime: this.startTime },
      this.parent,
    );
    return this.span;
  }
}

const current = new AsyncLocalStorage<CallTrace>();

/** Runs `fn` as the call `call` (its children and log lines find it), or as it is when tracing is off. */
export function runAsCall<T>(call: CallTrace | undefined, fn: () => T): T {
  return call === undefined ? fn() : current.run(call, fn);
}

/**
 * Runs `fn` as no call's: work one call starts for many (a shared flush, a model's wake, a timer
 * made on first use) is none of theirs, and its spans, log lines and audit events say so.
 */
export function outsideCall<T>(fn: () => T): T {
  return current.getStore() === undefined ? fn() : current.exit(fn);
}

/** The call this code runs for, when tracing is on and it runs for one. */
export function currentCall(): CallTrace | undefined {
  return current.getStore();
}

/** Notes what is known of the current call on its span (nothing when tracing is off). */
export function noteOnCall(attributes: Attributes): void {
  current.getStore()?.set(attributes);
}

/**
 * Runs `fn` in a child span of the current call (nothing more when tracing is off): its time, and
 * its failure's code when it throws.
 */
export async function inChildSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const call = current.getStore();
  if (call === undefined) return fn(undefined);
  const span = call.child(name, kind, attributes);
  try {
    return await fn(span);
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    span.setAttribute('error.type', typeof code === 'string' ? code : 'error');
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * The ids a log line carries (pino's mixin): the current call's, once its span exists. A line
 * never makes it: a sidecar's call must still be free to take the central gateway's trace.
 */
export function traceFields(): { trace_id?: string; span_id?: string; trace_flags?: string } {
  const ids = current.getStore()?.idsIfMade();
  if (ids === undefined) return {};
  return { trace_id: ids.traceId, span_id: ids.spanId, trace_flags: ids.sampled ? '01' : '00' };
}

/** The current call's trace id, for the records a call leaves (audit events, payload-log records). */
export function currentTraceId(): string | undefined {
  return current.getStore()?.idsIfMade()?.traceId;
}

export { ROOT_CONTEXT, SpanKind };
