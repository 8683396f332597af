import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../../common/logger.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import { MODEL_PLURAL, modelSchema, type Model } from '../../../common/resources/model.js';
import { Controller, type Reconciler } from '../../../operator/framework/controller.js';
import { ManifestResourceSource } from '../../../operator/framework/manifest-source.js';
import { specOrMetadataChanged } from '../../../operator/framework/predicates.js';
import { OperatorMetrics } from '../../../operator/metrics.js';
import { aModel } from '../../builders/resources.js';

const base = aModel(
  'model-a',
  { storageUri: 's3://b/a' },
  { namespace: 'ns', generation: 2, labels: { team: 'risk' }, annotations: { note: 'x' }, finalizers: ['f'] },
);
const meta = (over: Partial<Model['metadata']>): Model => ({
  ...base,
  metadata: { ...base.metadata, ...over },
});

describe('the event filter of a reconciler’s own resource', () => {
  it.each<[string, boolean, Model]>([
    ['its status alone', false, { ...base, status: { phase: 'Ready' } }],
    ['its resourceVersion alone', false, meta({ resourceVersion: '9' })],
    ['its spec (a new generation)', true, meta({ generation: 3 })],
    ['a label', true, meta({ labels: { team: 'fraud' } })],
    ['an annotation', true, meta({ annotations: {} })],
    ['a finalizer', true, meta({ finalizers: [] })],
    ['a deletion begun', true, meta({ deletionTimestamp: '2026-12-02T00:00:00Z' })],
  ])('an update of %s: acted on: %s', (_what, acted, after) => {
    expect(specOrMetadataChanged(base, after)).toBe(acted);
  });

  it('acts on every update of a source that counts no generation', () => {
    const { generation: _, ...rest } = base.metadata;
    const plain: Model = { ...base, metadata: rest };
    expect(specOrMetadataChanged(plain, { ...plain, status: { phase: 'Ready' } })).toBe(true);
  });
});

describe('a controller with the event filter, over manifests', () => {
  let dir: string;
  let controller: Controller;
  const reconciled: string[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tollgate-event-filter-'));
    reconciled.length = 0;
  });
  afterEach(async () => {
    await controller?.stop();
    await controller?.stopWatches();
    await rm(dir, { recursive: true, force: true });
  });

  it('reconciles a spec, label or deletion, and not a status written by anyone', async () => {
    const collection = new ManifestDir(dir, () => undefined).collection<Model>(MODEL_PLURAL, modelSchema);
    await collection.put(aModel('model-a', { storageUri: 's3://b/a' }));
    const models = new ManifestResourceSource<Model>(collection, createLogger('event-filter', 'silent'));
    const reconciler: Reconciler = {
      name: 'model',
      watches: { for: models, changed: specOrMetadataChanged, workers: 1 },
      reconcile: (key) => {
        reconciled.push(key);
        return Promise.resolve(undefined);
      },
    };
    controller = new Controller(reconciler, new OperatorMetrics(), createLogger('event-filter', 'silent'));
    await controller.watch();
    controller.start();
    await controller.idle();
    expect(reconciled).toEqual(['default/model-a']);

    const ref = { namespace: 'default', name: 'model-a' };
    // Until the source's cache holds the file's new content: by then the filter has decided.
    const seen = async (what: (m: Model | undefined) => boolean) => {
      for (let i = 0; i < 500 && !what(models.get(ref)); i++) await new Promise((r) => setTimeout(r, 10));
      expect(what(models.get(ref))).toBe(true);
      await controller.idle();
    };
    // The controller's own status write, and then another writer's, to the file itself.
    await models.updateStatus({ ...models.get(ref)!, status: { phase: 'Loading' } });
    const current = (await collection.get('model-a'))!;
    await collection.put({ ...current, status: { phase: 'Failed' } });
    await seen((m) => m?.status?.phase === 'Failed');
    expect(reconciled).toHaveLength(1);

    await collection.put({ ...(await collection.get('model-a'))!, spec: { storageUri: 's3://b/a2' } });
    await seen((m) => m?.spec.storageUri === 's3://b/a2');
    expect(reconciled).toHaveLength(2);

    const labelled = (await collection.get('model-a'))!;
    await collection.put({ ...labelled, metadata: { ...labelled.metadata, labels: { team: 'risk' } } });
    await seen((m) => m?.metadata.labels?.team === 'risk');
    expect(reconciled).toHaveLength(3);

    await collection.delete('model-a');
    await seen((m) => m === undefined);
    expect(reconciled).toEqual(Array.from({ length: 4 }, () => 'default/model-a'));
  });
});
