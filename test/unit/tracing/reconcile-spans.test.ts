// The operator's reconciles as spans, through the SDK's own in-memory exporter: one per reconcile,
// named for its controller, with its object and its outcome, and the reconcile's log lines carry
// its trace id.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { createLogger } from '../../../common/logger.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import { MODEL_PLURAL, modelSchema, type Model } from '../../../common/resources/model.js';
import { Controller, type Reconciler } from '../../../operator/framework/controller.js';
import { ManifestResourceSource } from '../../../operator/framework/manifest-source.js';
import { OperatorMetrics } from '../../../operator/metrics.js';
import { aModel } from '../../builders/resources.js';

describe('reconcile spans', () => {
  let dir: string | undefined;
  let controller: Controller | undefined;
  afterEach(async () => {
    await controller?.stop();
    await controller?.stopWatches();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('makes each reconcile a span with its object and outcome; a failure is in error with its code', async () => {
    dir = await mkdtemp(join(tmpdir(), 'tollgate-reconcile-spans-'));
    const collection = new ManifestDir(dir, () => undefined).collection<Model>(MODEL_PLURAL, modelSchema);
    await collection.put(aModel('model-good', { storageUri: 's3://b/a' }));
    await collection.put(aModel('model-bad', { storageUri: 's3://b/b' }));
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger(
      'reconcile-spans',
      'info',
      new Writable({
        write(chunk: Buffer, _e, done) {
          for (const l of chunk.toString().split('\n'))
            if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
          done();
        },
      }),
    );
    const reconciler: Reconciler = {
      name: 'model',
      watches: { for: new ManifestResourceSource<Model>(collection, log), workers: 1 },
      reconcile: (key) => {
        log.info({ object: key }, 'reconciling');
        if (key.endsWith('/model-bad'))
          return Promise.reject(Object.assign(new Error('no store'), { code: 'store_unreachable' }));
        return Promise.resolve(undefined);
      },
    };
    controller = new Controller(reconciler, new OperatorMetrics(), log, 1, provider.getTracer('test'));
    await controller.watch();
    controller.start();
    await controller.idle();
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    const good = spans.find((s) => s.attributes['k8s.object.name'] === 'model-good');
    const bad = spans.find((s) => s.attributes['k8s.object.name'] === 'model-bad');
    expect(good?.name).toBe('reconcile model');
    expect(good?.attributes).toMatchObject({
      'tollgate.controller': 'model',
      'k8s.namespace.name': 'default',
      'tollgate.reconcile.result': 'success',
    });
    expect(good?.attributes['tollgate.decision']).toBeUndefined();
    expect([bad?.attributes['error.type'], bad?.status.code]).toEqual(['store_unreachable', 2]);
    const line = lines.find((l) => l.msg === 'reconciling' && l.object === 'default/model-good');
    expect(line?.trace_id).toBe(good?.spanContext().traceId);
  });
});
