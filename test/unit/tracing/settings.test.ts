// Tracing's settings: the standard OTEL_* variables and Tollgate's own, read and checked once, each
// bad value refused with its name and what to write instead.
import { tracesUrl } from '../../../common/tracing/provider.js';
import { tracesWanted, tracingFromEnv, tracingSettingsSchema } from '../../../common/tracing/settings.js';
import { loadGatewayConfig } from '../../../gateway/config.js';

const settings = (env: NodeJS.ProcessEnv) => tracingSettingsSchema.parse(tracingFromEnv(env));

describe('tracing settings', () => {
  it('are off by default: no endpoint, no trace', () => {
    const t = settings({});
    expect(tracesWanted(t)).toBe(false);
    expect(tracesUrl(t)).toBeUndefined();
    expect(tracesWanted(loadGatewayConfig({ env: {} }).tracing)).toBe(false);
  });

  it('honour the OpenTelemetry variables: the endpoint gets /v1/traces, the signal’s own URL is taken as it is', () => {
    const t = settings({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.01',
      OTEL_SERVICE_NAME: 'edge-gateway',
    });
    expect(t).toMatchObject({
      protocol: 'http/json',
      sampler: 'parentbased_traceidratio',
      samplerArg: 0.01,
      serviceName: 'edge-gateway',
    });
    expect(tracesUrl(t)).toBe('http://collector:4318/v1/traces');
    expect(
      tracesUrl(
        settings({
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/custom/traces',
        }),
      ),
    ).toBe('http://b:4318/custom/traces');
  });

  it('let Tollgate’s own settings win over the OTEL_* ones', () => {
    const t = settings({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/v1/traces',
      OTEL_TRACES_SAMPLER: 'always_on',
      TOLLGATE_TRACES_ENDPOINT: 'http://c:4318',
      TOLLGATE_TRACES_SAMPLE_RATIO: '0.25',
    });
    expect(tracesUrl(t)).toBe('http://c:4318/v1/traces');
    expect([t.sampler, t.samplerArg]).toEqual(['parentbased_traceidratio', 0.25]);
  });

  it('are turned off by OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none, whatever the endpoint', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(tracesWanted(settings(endpoint))).toBe(true);
    expect(tracesWanted(settings({ ...endpoint, OTEL_SDK_DISABLED: 'true' }))).toBe(false);
    expect(tracesWanted(settings({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }))).toBe(false);
  });

  it('leave a process without an endpoint, or turned off, alone whatever else OTEL_* says', () => {
    const injected = { OTEL_TRACES_SAMPLER: 'jaeger_remote', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' };
    expect(tracesWanted(loadGatewayConfig({ env: injected }).tracing)).toBe(false);
    const off = { ...injected, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' };
    expect(tracesWanted(loadGatewayConfig({ env: off }).tracing)).toBe(false);
  });

  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
  it.each([
    [
      { ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      'tracing.protocol',
      /OTLP over gRPC is not built in: use http\/protobuf/,
    ],
    [
      { ...endpoint, OTEL_TRACES_SAMPLER_ARG: '1.5' },
      'tracing.samplerArg',
      /a sampling ratio is from 0 to 1/,
    ],
    [{ ...endpoint, OTEL_TRACES_SAMPLER: 'sometimes' }, 'tracing.sampler', /always_on/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'tracing.endpoint', /http:\/\/ or https:\/\/ URL/],
  ])('refuse %j with the setting named and what to write', (env, field, message) => {
    let thrown: unknown;
    try {
      loadGatewayConfig({ env });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toMatchObject({ code: 'invalid_config', field });
    expect((thrown as Error).message).toMatch(message);
  });

  it('merge field by field: the environment’s service name keeps the file’s endpoint', () => {
    const config = loadGatewayConfig({
      env: { OTEL_SERVICE_NAME: 'gw-eu' },
      overrides: { tracing: { endpoint: 'http://collector:4318' } },
    });
    expect(config.tracing).toMatchObject({ endpoint: 'http://collector:4318', serviceName: 'gw-eu' });
  });
});
