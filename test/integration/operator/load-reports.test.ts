import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { generateStoredKey } from '../../../common/crypto/key-file.js';
import { createLogger } from '../../../common/logger.js';
import { CENTRAL_SCOPE, ReportChecker, reportKey, signReport } from '../../../common/redis/load-reports.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import { MODEL_PLURAL, modelSchema, type Model } from '../../../common/resources/model.js';
import { servedVersions } from '../../../common/resources/model-versions.js';
import { loadField } from '../../../common/resources/model-scaling.js';
import { ManifestResourceSource } from '../../../operator/framework/manifest-source.js';
import { Autoscaler } from '../../../operator/scaling/autoscaler.js';
import { redis } from '../../harness/index.js';
import { aModel } from '../../builders/resources.js';

/**
 * A team whose pods hold the sidecar's Redis credential writes load reports by hand, as it could
 * with redis-cli: none of them may scale a model of another namespace (every standalone Model is
 * in `default`), while a report signed for the model's own namespace or by a central gateway does.
 */
describe('load reports the autoscaler believes', () => {
  let dir: string;
  let client: Redis;
  let scaler: Autoscaler;
  let models: ManifestResourceSource<Model>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tollgate-load-reports-'));
    const manifests = new ManifestDir(dir, () => undefined);
    // fraud is guarded by sidecars (their reports count); ledger by the central gateways alone.
    for (const [name, gateway] of [
      ['fraud', 'sidecar'],
      ['ledger', 'central'],
    ] as const) {
      await manifests.collection<Model>(MODEL_PLURAL, modelSchema).put(
        aModel(name, {
          storageUri: `file://${dir}/${name}`,
          gateway,
          scaling: { minReplicas: 1, maxReplicas: 8, targetInFlight: 1 },
        }),
      );
    }
    client = new Redis((await redis('load-reports')).url);
    const log = createLogger('autoscaler', 'silent');
    models = new ManifestResourceSource<Model>(manifests.collection<Model>(MODEL_PLURAL, modelSchema), log);
    await models.start(() => undefined);
    const stored = await generateStoredKey();
    scaler = new Autoscaler({ models, redis: client, log, reports: new ReportChecker(stored), tickMs: 50 });
    await scaler.start(() => undefined);
    signingKey = stored;
  });
  let signingKey: Awaited<ReturnType<typeof generateStoredKey>>;

  afterAll(async () => {
    await scaler.stop();
    await models.stop();
    client.disconnect();
    await rm(dir, { recursive: true, force: true });
  });

  const replicas = (name = 'fraud'): number => {
    const model = models.list().find((m) => m.metadata.name === name)!;
    return scaler.replicasFor(model, servedVersions(model.metadata.name, model.spec)[0]!);
  };
  const redisKey = redisKeys.modelLoad('fraud');
  const report = async (field: string, value: unknown) => {
    await client.hset(redisKey, field, JSON.stringify(value));
    // A few passes of the autoscaler (every 50 ms) read it.
    await new Promise((r) => setTimeout(r, 300));
  };

  test('unsigned, another team’s and moved reports scale nothing; the model’s own namespace does', async () => {
    expect(replicas()).toBe(1);
    const at = () => Date.now();
    await report(loadField('forged', ''), { concurrency: 50, at: at() });
    expect(replicas()).toBe(1);

    // Another team's sidecar, with its own namespace's key: honest about who it is, or not.
    const teamB = { scope: 'team-b', key: reportKey(signingKey, 'team-b') };
    let field = loadField('team-b-sidecar', '');
    await report(field, signReport(teamB, redisKey, field, { concurrency: 50, at: at() }));
    field = loadField('team-b-posing', '');
    await report(
      field,
      signReport({ ...teamB, scope: 'default' }, redisKey, field, { concurrency: 50, at: at() }),
    );
    expect(replicas()).toBe(1);

    // A central gateway's genuine report on another model, copied over.
    const central = { scope: CENTRAL_SCOPE, key: reportKey(signingKey, CENTRAL_SCOPE) };
    field = loadField('central', '');
    const elsewhere = signReport(central, redisKeys.modelLoad('other'), field, { concurrency: 50, at: at() });
    await report(field, elsewhere);
    expect(replicas()).toBe(1);

    await client.del(redisKey);
    // The model's own namespace (its sidecars, under the sidecars' key) and a central gateway:
    // believed, summed across the two.
    const own = { scope: 'default', key: reportKey(signingKey, 'default') };
    const sidecarKey = redisKeys.sidecarModelLoad('fraud');
    field = loadField('own-sidecar', '');
    await client.hset(
      sidecarKey,
      field,
      JSON.stringify(signReport(own, sidecarKey, field, { concurrency: 2, at: at() })),
    );
    field = loadField('central', '');
    await report(field, signReport(central, redisKey, field, { concurrency: 3, at: at() }));
    expect(replicas()).toBe(5);
  });

  test('fields that are not reports (null, a string, a number, a bad shape) are skipped: the model’s own still counts', async () => {
    const sidecarKey = redisKeys.sidecarModelLoad('fraud');
    const own = { scope: 'default', key: reportKey(signingKey, 'default') };
    const field = loadField('own-sidecar', '');
    await client.del(sidecarKey, redisKey);
    await client.hset(
      sidecarKey,
      ...['null', '"x"', '7', '[]', '{"at":"soon","concurrency":{}}'].flatMap((junk, i) => [
        `junk-${i}|`,
        junk,
      ]),
      field,
      JSON.stringify(signReport(own, sidecarKey, field, { concurrency: 6, at: Date.now() })),
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(replicas()).toBe(6);
  });

  test('a load hash grown past what reports make is not read, nor removed: the replicas stay until it is back within bounds', async () => {
    const sidecarKey = redisKeys.sidecarModelLoad('fraud');
    const own = { scope: 'default', key: reportKey(signingKey, 'default') };
    const genuine = (name: string, concurrency: number) => {
      const field = loadField(name, '');
      return [field, JSON.stringify(signReport(own, sidecarKey, field, { concurrency, at: Date.now() }))];
    };
    const passes = () => new Promise((r) => setTimeout(r, 300));
    // Any team's sidecar password may write any model's hash: one value of 3 MB beside the
    // model's own report of 7 calls in flight, then thousands of small fields.
    const junk = [
      ['junk', 'x'.repeat(3 * 1024 * 1024)],
      Array.from({ length: 3_000 }, (_, i) => [`junk-${i}|`, '{}']).flat(),
    ];
    for (const fields of junk) {
      await client.del(sidecarKey);
      await client.hset(sidecarKey, ...genuine('own-sidecar', 7), ...fields);
      // A pass under way when it was written has ended (a pass takes one tick, 50 ms).
      await new Promise((r) => setTimeout(r, 150));
      const before = replicas();
      await passes();
      // Not read (the 7 would scale it), not removed (the model's own report is in it).
      expect(replicas()).toBe(before);
      expect(await client.hexists(sidecarKey, loadField('own-sidecar', ''))).toBe(1);
    }
    // Back within bounds: read, and the model's report counts.
    await client.del(sidecarKey);
    await client.hset(sidecarKey, ...genuine('own-sidecar', 7));
    await passes();
    expect(replicas()).toBeGreaterThanOrEqual(7);
  });

  test("junk in the sidecars' hash of a model the central gateways alone serve holds back nothing", async () => {
    const sidecarKey = redisKeys.sidecarModelLoad('ledger');
    const centralKey = redisKeys.modelLoad('ledger');
    const central = { scope: CENTRAL_SCOPE, key: reportKey(signingKey, CENTRAL_SCOPE) };
    expect(replicas('ledger')).toBe(1); // planned, as the reconciler plans it
    // Any team's sidecar password may write it, and no sidecar of the model ever rewrites it.
    await client.hset(sidecarKey, ...Array.from({ length: 3_000 }, (_, i) => [`junk-${i}|`, '{}']).flat());
    const field = loadField('central', '');
    await client.hset(
      centralKey,
      field,
      JSON.stringify(signReport(central, centralKey, field, { concurrency: 4, at: Date.now() })),
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(replicas('ledger')).toBe(4);
  });
});
