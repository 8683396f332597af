import type { Sampler, SpanExporter } from '@opentelemetry/sdk-trace';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { diag, DiagLogLevel, type Tracer } from '@opentelemetry/api';
import type { Logger } from '../logger.js';
import { TOLLGATE_VERSION } from '../version.js';
import { tracesWanted, type TracingSettings } from './settings.js';

/** A process's tracer and how it stops: the spans still queued are sent first. */
export interface Tracing {
  tracer: Tracer;
  shutdown(): Promise<void>;
}

/** Where spans go: the signal's own URL as given, else the collector's base with `/v1/traces`. */
export function tracesUrl(t: TracingSettings): string | undefined {
  if (t.tracesEndpoint !== undefined) return t.tracesEndpoint;
  return t.endpoint === undefined ? undefined : `${t.endpoint.replace(/\/+$/, '')}/v1/traces`;
}

function samplerOf(t: TracingSettings): Sampler {
  const ratio = new TraceIdRatioBasedSampler(t.samplerArg ?? 1);
  switch (t.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * A tracer for this process, or none when the settings ask for no traces (the default): then no
 * span is made and nothing on a call's path looks at tracing beyond one check. The exporters are
 * loaded only when traces are on, so a process without them does not hold them in memory. The
 * exporter reads the rest of `OTEL_EXPORTER_OTLP_*` (headers, timeout, compression) itself.
 */
export async function startTracing(
  settings: TracingSettings,
  defaultServiceName: string,
  log: Logger,
): Promise<Tracing | undefined> {
  const url = tracesUrl(settings);
  if (!tracesWanted(settings) || url === undefined) return undefined;
  const exporter: SpanExporter =
    settings.protocol === 'http/json'
      ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({ url })
      : new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter({ url });
  // OTEL_RESOURCE_ATTRIBUTES first; the service's name (OTEL_SERVICE_NAME, or the process's own) over it.
  const resource = detectResources({ detectors: [envDetector] }).merge(
    resourceFromAttributes({
      'service.name': settings.serviceName ?? defaultServiceName,
      'service.version': TOLLGATE_VERSION,
    }),
  );
  const provider = new TracerProvider({
    sampler: samplerOf(settings),
    resource,
    // A path or a header value is the caller's to make long (up to the head's limit): a span keeps
    // what a reader needs of it.
    spanLimits: { attributeValueLengthLimit: 1024, attributeCountLimit: 64 },
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1_000 })],
  });
  // Export failures are the SDK's to report: at warn, in the process's own log.
  diag.setLogger(
    {
      error: (message, ...args) => log.warn({ args }, `tracing: ${message}`),
      warn: (message, ...args) => log.warn({ args }, `tracing: ${message}`),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    DiagLogLevel.WARN,
  );
  // Where, without what a URL may carry of a credential (its user, its query).
  const shown = new URL(url);
  log.info(
    {
      url: `${shown.protocol}//${shown.host}${shown.pathname}`,
      sampler: settings.sampler,
      ratio: settings.samplerArg,
    },
    'tracing on (OTLP over HTTP)',
  );
  return {
    tracer: provider.getTracer('tollgate', TOLLGATE_VERSION),
    shutdown: () => provider.shutdown(),
  };
}
