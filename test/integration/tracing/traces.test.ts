// One trace from the edge through the central gateway, a model's sidecar and MLServer, sent over
// OTLP/HTTP to a real OpenTelemetry Collector (built from its Go modules) and read back from what
// it received. Whose trace a call joins is only a trusted sender's word.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { createLogger } from '../../../common/logger.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { grantAudience } from '../../../common/resources/grant.js';
import { RouteWriter } from '../../../common/routes/workflow-routes.js';
import type { GatewayConfigInput } from '../../../gateway/config.js';
import { createSidecar, type Sidecar } from '../../../gateway/sidecar/sidecar.js';
import type { AuditEvent } from '../../../gateway/audit/audit-event.js';
import { otelCollector, redis, startMlserver, venv } from '../../harness/index.js';
import { readSpans, type ReadSpan } from '../../harness/components/otel-collector.js';
import { waitUntil } from '../../harness/wait.js';
import {
  apikey,
  createKey,
  redisClient,
  send,
  sidecarServices,
  startGateway,
  uniqueName,
  type TestGateway,
} from '../gateway/support.js';
import { testSealer } from '../signing.js';
import { markIndexBuilt } from '../workflow-route.js';
import { InferenceClient } from '../../harness/grpc-clients.js';

const run = promisify(execFile);
const FIXTURE = new URL('../harness/fixtures/train_iris.py', import.meta.url).pathname;

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

describe('OpenTelemetry traces through the gateway, a sidecar and the runtime', () => {
  const model = `model-${uniqueName('traced')}`;
  let dir: string;
  let rc: Redis;
  let collector: { url: string; log: string };
  let ml: Awaited<ReturnType<typeof startMlserver>>;
  let sidecar: Sidecar;
  let central: TestGateway;
  let untrusting: TestGateway;
  let sidecarUrl: string;
  const lines: string[] = [];
  const audited: AuditEvent[] = [];
  let rows: number[][];

  /** A central gateway tracing every call to the collector; `keepLines`: its log lines are read. */
  async function gateway(settings: Partial<GatewayConfigInput>, keepLines = false): Promise<TestGateway> {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(
          ...chunk
            .toString()
            .split('\n')
            .filter((l) => l !== ''),
        );
        done();
      },
    });
    return startGateway(
      {
        redisUrl: (await redis()).url,
        tracing: { endpoint: collector.url, sampler: 'always_on' },
        ...settings,
      },
      keepLines ? createLogger('gateway-test', 'info', sink) : undefined,
    );
  }

  /** The server span `service` made for the call of key `keyId`, once the collector has it. */
  async function serverSpanOf(keyId: string, service: string): Promise<ReadSpan | undefined> {
    let found: ReadSpan | undefined;
    await waitUntil(
      `${service}'s span of key ${keyId}`,
      async () => {
        found = readSpans(collector.log).find(
          (s) =>
            s.attributes['tollgate.key.id'] === keyId && s.service === service && s.kind.includes('Server'),
        );
        return found !== undefined;
      },
      { timeoutMs: 20_000 },
    );
    return found;
  }

  const inferBody = () =>
    JSON.stringify({
      inputs: [{ name: 'input-0', datatype: 'FP64', shape: [rows.length, 4], data: rows.flat() }],
    });

  /** The spans of one trace, once the collector has at least `count` of them (and `complete` says so). */
  async function traceOf(
    traceId: string,
    count: number,
    complete: (spans: ReadSpan[]) => boolean = () => true,
  ): Promise<ReadSpan[]> {
    let spans: ReadSpan[] = [];
    await waitUntil(
      `${count} spans of trace ${traceId}`,
      async () => {
        spans = readSpans(collector.log).filter((s) => s.traceId === traceId);
        return spans.length >= count && complete(spans);
      },
      { timeoutMs: 20_000 },
    );
    return spans;
  }

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-traces-'));
    await run(venv().python, [FIXTURE, dir, model]);
    rows = (JSON.parse(await readFile(path.join(dir, 'expected.json'), 'utf8')) as { rows: number[][] }).rows;
    collector = await otelCollector('traces');
    ml = await startMlserver(dir);
    const r = await redis();
    rc = redisClient(r.url);
    // Behind a proxy on loopback it trusts: its traceparent is believed.
    central = await gateway({ trustedProxies: 1, trustedProxyCidrs: ['127.0.0.1/32'] }, true);
    central.services.audit.subscribe((e) => audited.push(e));
    // Reached directly: a caller's traceparent is not.
    untrusting = await gateway({});
    // The default sampler: a caller it trusts decides, a call of its own is sampled.
    const services = await sidecarServices(r.url, { tracing: { endpoint: collector.url } });
    sidecar = createSidecar(services, {
      kind: 'model',
      namespace: 'default',
      upstream: new URL(ml.url),
      model,
    });
    sidecarUrl = `http://127.0.0.1:${(await sidecar.traffic.listen(0, '127.0.0.1')).port}`;
    await new RouteWriter(rc, await testSealer()).put(redisKeys.modelRoute(model), {
      url: sidecarUrl,
      source: `model/default/${model}`,
      grantAudience: grantAudience.model('default', model),
    });
    await markIndexBuilt(rc);
  }, 180_000);

  afterAll(async () => {
    await sidecar?.traffic.shutdown();
    await central?.stop();
    await untrusting?.stop();
    await ml?.stop();
    rc?.disconnect();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('makes one V2 call through the gateway and the sidecar one trace: server and client spans, each a child of the last', async () => {
    const { key, grant } = await createKey(rc, 'platform', ['models:inference']);
    const traceId = hex(16);
    const edgeSpan = hex(8);
    const r = await send(central.url, `/v2/models/${model}/infer`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...apikey(key),
        traceparent: `00-${traceId}-${edgeSpan}-01`,
        'x-forwarded-for': '203.0.113.9',
      },
      body: inferBody(),
    });
    expect(r.status).toBe(200);
    // Each process exports on its own: the trace is whole once the runtime's inference is in it.
    const spans = await traceOf(
      traceId,
      5,
      (all) =>
        all.some((s) => s.service === 'tollgate-sidecar' && s.name === 'POST') &&
        all.some((s) => s.name === 'POST' && s.service === 'tollgate-gateway'),
    );
    const byParent = (parent: string, service: string, kind: string) =>
      spans.find((s) => s.parentId === parent && s.service === service && s.kind.includes(kind));

    const gatewayCall = byParent(edgeSpan, 'tollgate-gateway', 'Server');
    expect(gatewayCall?.name).toBe('POST /v2/models/{model}/infer');
    expect(gatewayCall?.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v2/models/{model}/infer',
      'http.response.status_code': '200',
      'client.address': '203.0.113.9',
      'tollgate.key.id': grant.id,
      'tollgate.owner': grant.owner,
      'tollgate.module': 'platform',
      'tollgate.target': `model/${model}`,
      'tollgate.decision': 'allowed',
    });
    expect(Number(gatewayCall?.attributes['tollgate.upstream.duration_ms'])).toBeGreaterThan(0);
    // The key was not cached yet: its lookup is the call's Redis round trip.
    expect(byParent(gatewayCall?.id ?? '-', 'tollgate-gateway', 'Client')).toBeDefined();
    expect(spans.some((s) => s.name === 'redis key lookup' && s.parentId === gatewayCall?.id)).toBe(true);

    const toSidecar = spans.find(
      (s) => s.parentId === gatewayCall?.id && s.service === 'tollgate-gateway' && s.name === 'POST',
    );
    expect(toSidecar?.attributes['url.full']).toMatch(new RegExp(`/v2/models/${model}/infer$`));
    const sidecarCall = byParent(toSidecar?.id ?? '-', 'tollgate-sidecar', 'Server');
    expect(sidecarCall?.attributes).toMatchObject({
      'tollgate.key.id': grant.id,
      'tollgate.decision': 'allowed',
      'http.response.status_code': '200',
    });
    // The runtime's inference (the sidecar may fetch the model's metadata first: a GET).
    const toRuntime = spans.find(
      (s) => s.parentId === sidecarCall?.id && s.service === 'tollgate-sidecar' && s.name === 'POST',
    );
    expect(toRuntime?.attributes['url.full']).toBe(`${ml.url.replace(/\/$/, '')}/v2/models/${model}/infer`);
    // Nothing the collector received holds the key.
    expect(await readFile(collector.log, 'utf8')).not.toContain(key);
  });

  it('takes a caller’s traceparent from a trusted proxy only: reached directly, a call starts its own trace', async () => {
    const { key, grant } = await createKey(rc, 'platform', ['models:inference']);
    const forged = hex(16);
    const r = await send(untrusting.url, `/v2/models/${model}/infer`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...apikey(key),
        traceparent: `00-${forged}-${hex(8)}-01`,
      },
      body: inferBody(),
    });
    expect(r.status).toBe(200);
    const own = await serverSpanOf(grant.id, 'tollgate-gateway');
    expect(own?.traceId).not.toBe(forged);
    expect(own?.parentId).toBe('');
    expect(readSpans(collector.log).some((s) => s.traceId === forged)).toBe(false);
    // Its sidecar joined the gateway's own trace, not the caller's.
    const joined = await traceOf(own?.traceId ?? '-', 4, (all) =>
      all.some((s) => s.service === 'tollgate-sidecar'),
    );
    expect(joined.some((s) => s.service === 'tollgate-sidecar')).toBe(true);
  });

  it('makes no span anywhere for a call its gateway does not sample: the sidecar is told so and follows', async () => {
    const sparing = await gateway({ tracing: { endpoint: collector.url, sampler: 'always_off' } });
    try {
      const { key, grant } = await createKey(rc, 'platform', ['models:inference']);
      const r = await send(sparing.url, `/v2/models/${model}/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...apikey(key) },
        body: inferBody(),
      });
      expect(r.status).toBe(200);
      // A later call's spans arrive after this one's would have: by then none of this key came.
      const { key: later } = await createKey(rc, 'platform', ['models:inference']);
      const marker = hex(16);
      await send(central.url, `/v2/models/${model}/infer`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...apikey(later),
          traceparent: `00-${marker}-${hex(8)}-01`,
        },
        body: inferBody(),
      });
      await traceOf(marker, 4, (all) =>
        all.some((s) => s.service === 'tollgate-sidecar' && s.name === 'POST'),
      );
      expect(readSpans(collector.log).filter((s) => s.attributes['tollgate.key.id'] === grant.id)).toEqual(
        [],
      );
    } finally {
      await sparing.stop();
    }
  });

  it('puts a refused call’s code on its span, and its trace id in the audit event and the log line', async () => {
    const viewer = await createKey(rc, 'platform', ['models:viewer']);
    const traceId = hex(16);
    const r = await send(central.url, `/v2/models/${model}/infer`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...apikey(viewer.key),
        traceparent: `00-${traceId}-${hex(8)}-01`,
      },
      body: inferBody(),
    });
    expect([r.status, r.json.code]).toEqual([403, 'model_access_denied']);
    const [span] = (await traceOf(traceId, 1, (all) => all.some((s) => s.kind.includes('Server')))).filter(
      (s) => s.kind.includes('Server'),
    );
    expect(span?.attributes).toMatchObject({
      'tollgate.decision': 'model_access_denied',
      'error.type': 'model_access_denied',
      'http.response.status_code': '403',
      'tollgate.key.id': viewer.grant.id,
    });
    const event = audited.find((e) => e.action === 'key.refused' && e.keyId === viewer.grant.id);
    expect(event?.traceId).toBe(traceId);
    const line = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.trace_id === traceId);
    expect(line).toMatchObject({ trace_id: traceId, span_id: span?.id });
  });

  it('makes a gRPC call a server span of its full method, a trusted proxy’s traceparent its parent, and the runtime call its child', async () => {
    const grpc = new InferenceClient(`127.0.0.1:${await central.gateway.listenGrpc(0, '127.0.0.1')}`);
    try {
      const { key, grant } = await createKey(rc, 'platform', ['models:inference']);
      const traceId = hex(16);
      const edgeSpan = hex(8);
      const ok = await grpc.call(
        'ModelInfer',
        {
          model_name: model,
          inputs: [
            {
              name: 'input-0',
              datatype: 'FP64',
              shape: [rows.length, 4],
              contents: { fp64_contents: rows.flat() },
            },
          ],
        },
        { ...apikey(key), traceparent: `00-${traceId}-${edgeSpan}-01` },
      );
      expect(ok.error).toBeUndefined();
      const spans = await traceOf(traceId, 3, (all) =>
        all.some((s) => s.kind.includes('Client') && s.name === 'POST' && s.service === 'tollgate-gateway'),
      );
      const server = spans.find((s) => s.parentId === edgeSpan);
      expect(server?.name).toBe('inference.GRPCInferenceService/ModelInfer');
      expect(server?.attributes).toMatchObject({
        'rpc.system.name': 'grpc',
        'rpc.response.status_code': '0',
        'tollgate.key.id': grant.id,
        'tollgate.target': `model/${model}`,
        'tollgate.decision': 'allowed',
      });
      expect(
        spans.some((s) => s.parentId === server?.id && s.kind.includes('Client') && s.name === 'POST'),
      ).toBe(true);
    } finally {
      grpc.close();
    }
  });

  it('lets no call to a sidecar choose its trace unless its grant shows the central gateway sent it', async () => {
    const { key, grant } = await createKey(rc, 'platform', ['models:inference']);
    const forged = hex(16);
    const r = await send(sidecarUrl, `/v2/models/${model}/infer`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...apikey(key),
        traceparent: `00-${forged}-${hex(8)}-01`,
      },
      body: inferBody(),
    });
    expect(r.status).toBe(200);
    const own = await serverSpanOf(grant.id, 'tollgate-sidecar');
    expect(own?.traceId).not.toBe(forged);
    expect(own?.parentId).toBe('');
  });
});
