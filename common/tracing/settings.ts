import { z } from 'zod';

/**
 * Tracing's settings (OpenTelemetry, OTLP over HTTP), one schema for the gateway, the sidecar and
 * the operator. Off unless an endpoint is given: by Tollgate's own settings or by the standard
 * `OTEL_*` variables, which every OpenTelemetry SDK reads and a platform team sets once for all.
 */
const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);
const otlpUrl = z.url({ protocol: /^https?$/, error: 'an OTLP endpoint is an http:// or https:// URL' });

/**
 * Off, or nowhere to send spans (once every layer is merged): the rest cannot matter, and a
 * platform that sets OTEL_* on every container (a sampler this SDK does not know) must not stop
 * the process for it. Only what is used is checked.
 */
function unused(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
  const given = raw as Record<string, unknown>;
  const off = given['disabled'] === true || given['disabled'] === 'true';
  if (off) return { disabled: true };
  const has = (v: unknown): boolean => v !== undefined && v !== '';
  return has(given['endpoint']) || has(given['tracesEndpoint']) ? raw : {};
}

const tracingFields = z.strictObject({
  /**
   * The collector's base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`): traces go to `<endpoint>/v1/traces`.
   * Unset, and no `tracesEndpoint`: no trace is made.
   */
  endpoint: otlpUrl.optional(),
  /** The full URL traces are sent to (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), as it stands. */
  tracesEndpoint: otlpUrl.optional(),
  /** How spans are encoded (`OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`). */
  protocol: z
    .enum(['http/protobuf', 'http/json', 'grpc'])
    .default('http/protobuf')
    .refine((p) => p !== 'grpc', {
      error:
        'OTLP over gRPC is not built in: use http/protobuf (the default) or http/json, on the collector port 4318',
    }),
  /** `OTEL_TRACES_SAMPLER`: the specification's names. */
  sampler: z.enum(SAMPLERS).default('parentbased_always_on'),
  /** `OTEL_TRACES_SAMPLER_ARG`: the ratio of the `*traceidratio` samplers, 0 to 1. */
  samplerArg: z.coerce
    .number('a sampling ratio is a number from 0 to 1 (0.01: one call in a hundred)')
    .min(0, 'a sampling ratio is from 0 to 1 (0.01: one call in a hundred)')
    .max(1, 'a sampling ratio is from 0 to 1 (0.01: one call in a hundred)')
    .optional(),
  /** `OTEL_SERVICE_NAME`; unset, the process's own (tollgate-gateway, tollgate-sidecar, tollgate-operator). */
  serviceName: z.string().min(1).max(255).optional(),
  /** `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`: no trace whatever the endpoint. */
  disabled: flag.default(false),
});

export const tracingSettingsSchema = z
  .preprocess(unused, tracingFields)
  .default({ protocol: 'http/protobuf', sampler: 'parentbased_always_on', disabled: false });

export type TracingSettings = z.infer<typeof tracingSettingsSchema>;
export type TracingSettingsInput = z.input<typeof tracingSettingsSchema>;

/** Whether these settings make traces at all. */
export function tracesWanted(t: TracingSettings): boolean {
  return !t.disabled && (t.endpoint !== undefined || t.tracesEndpoint !== undefined);
}

/**
 * The settings the environment gives: the `OTEL_*` variables, then Tollgate's own
 * (`TOLLGATE_TRACES_ENDPOINT`, `TOLLGATE_TRACES_SAMPLE_RATIO`), which win where both are set. Each
 * value is checked by the schema, so a bad one stops the process with its name.
 */
export function tracingFromEnv(env: NodeJS.ProcessEnv): Partial<Record<keyof TracingSettings, string>> {
  const out: Partial<Record<keyof TracingSettings, string>> = {};
  const put = (field: keyof TracingSettings, value: string | undefined): void => {
    if (value !== undefined && value.trim() !== '') out[field] = value.trim();
  };
  put('endpoint', env.OTEL_EXPORTER_OTLP_ENDPOINT);
  put('tracesEndpoint', env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  put('protocol', env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL);
  put('sampler', env.OTEL_TRACES_SAMPLER?.toLowerCase());
  put('samplerArg', env.OTEL_TRACES_SAMPLER_ARG);
  put('serviceName', env.OTEL_SERVICE_NAME);
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' || env.OTEL_TRACES_EXPORTER?.trim() === 'none')
    out.disabled = 'true';
  if (env.TOLLGATE_TRACES_ENDPOINT !== undefined && env.TOLLGATE_TRACES_ENDPOINT.trim() !== '') {
    delete out.tracesEndpoint;
    put('endpoint', env.TOLLGATE_TRACES_ENDPOINT);
  }
  if (env.TOLLGATE_TRACES_SAMPLE_RATIO !== undefined && env.TOLLGATE_TRACES_SAMPLE_RATIO.trim() !== '') {
    out.sampler = 'parentbased_traceidratio';
    put('samplerArg', env.TOLLGATE_TRACES_SAMPLE_RATIO);
  }
  return out;
}

/**
 * The variables a process passes on to the sidecars it injects, so they trace as it does: the
 * endpoint, protocol and sampler. Not OTEL_EXPORTER_OTLP_HEADERS: it may carry a collector's
 * credential, and a pod's spec is its team's to read.
 */
export const PASSED_TRACING_ENV = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_SDK_DISABLED',
  'OTEL_TRACES_EXPORTER',
  'TOLLGATE_TRACES_ENDPOINT',
  'TOLLGATE_TRACES_SAMPLE_RATIO',
] as const;

export function passedTracingEnv(env: NodeJS.ProcessEnv): Array<{ name: string; value: string }> {
  return PASSED_TRACING_ENV.flatMap((name) => {
    const value = env[name];
    return value === undefined || value === '' ? [] : [{ name, value }];
  });
}
