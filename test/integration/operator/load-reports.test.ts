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
    await manifests.collection<Model>(MODEL_PLURAL, modelSchema).put({
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'Model',
      metadata: { name: 'fraud' },
      spec: {
        storageUri: `file://${dir}/fraud`,
        scaling: { minReplicas: 1, maxReplicas: 8, targetInFlight: 1 },
      },
    } as Model);
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

  const replicas = (): number => {
    const model = models.list()[0]!;
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

  test('a load hash grown past what reports make is removed unread; reports written after it are read', async () => {
    expect(replicas()).toBeGreaterThan(0);
    const sidecarKey = redisKeys.sidecarModelLoad('fraud');
    const own = { scope: 'default', key: reportKey(signingKey, 'default') };
    const genuine = (name: string) => {
      const field = loadField(name, '');
      return [field, JSON.stringify(signReport(own, sidecarKey, field, { concurrency: 1, at: Date.now() }))];
    };
    const passes = () => new Promise((r) => setTimeout(r, 300));
    // One value of 3 MB beside a genuine report, as a team could write with its sidecar's password.
    await client.hset(sidecarKey, ...genuine('own-sidecar'), 'junk', 'x'.repeat(3 * 1024 * 1024));
    await passes();
    expect(await client.exists(sidecarKey)).toBe(0);
    // Thousands of small fields.
    const fields = Array.from({ length: 3_000 }, (_, i) => [`junk-${i}|`, '{}']).flat();
    await client.hset(sidecarKey, ...fields);
    await passes();
    expect(await client.exists(sidecarKey)).toBe(0);
    // The sidecars write their reports again: a hash of their size stays, and is read.
    await client.hset(sidecarKey, ...genuine('own-sidecar'), ...genuine('own-sidecar-2'));
    await passes();
    expect(await client.hlen(sidecarKey)).toBe(2);
  });
});
