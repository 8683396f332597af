import { rm } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createLogger } from '../../../common/logger.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import { modelSchema, type Model } from '../../../common/resources/model.js';
import { loadGatewayConfig } from '../../../gateway/config.js';
import type { GatewayServer } from '../../../gateway/server.js';
import { manifestModels } from '../../../gateway/v2/model-directory.js';
import { prometheus, redis } from '../../harness/index.js';
import { panelsWithoutSeries } from '../../harness/dashboard.js';
import {
  apikey,
  createKey,
  redisClient,
  registerService,
  startUpstream,
  type Upstream,
} from '../gateway/support.js';
import { modelResource, ServedModels, trainExamples } from '../inference/stack.js';
import { TEST_SIGNING_KEY_FILE } from '../signing.js';
import { buildCentralGateway } from '../../../gateway/central-gateway.js';

/**
 * The chart's Grafana dashboard against a real Prometheus (Debian's) scraping a real gateway and
 * the MLServer behind it: after some traffic, every query of every panel returns series. A
 * renamed metric, a wrong label or a broken expression fails here, not in someone's Grafana.
 */
let models: string;
let work: string;
let served: ServedModels;
let gateway: GatewayServer;
let base: string;
let rc: ReturnType<typeof redisClient>;
let upstream: Upstream;

beforeAll(async () => {
  const r = await redis();
  rc = redisClient(r.url);
  upstream = await startUpstream();
  await registerService(rc, 'wf-dash', 'api', upstream.url);
  models = await trainExamples(['iris']);
  work = await mkdtemp(path.join(tmpdir(), 'tollgate-dashboard-'));
  served = new ServedModels(path.join(work, 'runtimes'), {}, rc);
  const manifests = new ManifestDir(path.join(work, 'manifests'), () => undefined).collection<Model>(
    'models',
    modelSchema,
  );
  const folder = path.join(models, 'model-iris');
  const model = modelResource('model-iris', pathToFileURL(folder).href);
  await manifests.put(model);
  const state = await served.serve(model, folder);
  if (state.metricsUrl === undefined) throw new Error('the local runtime reports no metrics address');

  const config = loadGatewayConfig({
    env: {},
    overrides: { grantSigningKeyFile: TEST_SIGNING_KEY_FILE, host: '127.0.0.1', port: 0, redisUrl: r.url },
  });
  gateway = await buildCentralGateway(config, createLogger('dashboard-test', 'silent'), {
    models: manifestModels(manifests),
  });
  base = `http://127.0.0.1:${(await gateway.listen(0, '127.0.0.1')).port}`;
  promUrl = (await prometheus('dashboard', [`${base}/metrics`, state.metricsUrl])).url;
}, 600_000);

let promUrl: string;

afterAll(async () => {
  await gateway?.shutdown();
  await served?.stop();
  await upstream?.close();
  rc?.disconnect();
  for (const dir of [work, models]) if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('the Grafana dashboard in the chart', () => {
  it('has a query in every panel that returns series from a real Prometheus', async () => {
    // Traffic of every kind the panels show: answers, a V2 rejection, a runtime refusal, a bad key.
    const { key } = await createKey(rc, 'platform', ['models:inference']);
    const bda = (await createKey(rc, 'bda', ['wf-dash'])).key;
    const workflowCall = (k: string) =>
      fetch(`${base}/events/bda/wf-dash/api/orders`, { headers: apikey(k) });
    const infer = (body: unknown) =>
      fetch(`${base}/v2/models/model-iris/infer`, {
        method: 'POST',
        headers: { ...apikey(key), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const features = (shape: number[], data: number[]) => ({
      inputs: [{ name: 'features', datatype: 'FP32', shape, data }],
    });
    const { panels, empty } = await panelsWithoutSeries(promUrl, async () => {
      for (let i = 0; i < 5; i++)
        expect((await infer(features([1, 4], [5.1, 3.5, 1.4, 0.2]))).status).toBe(200);
      expect((await infer(features([2, 4], [1, 2, 3]))).status).toBe(400);
      expect((await infer({ ...features([1, 4], [1, 2, 3, 4]), outputs: [{ name: 'scores' }] })).status).toBe(
        400,
      );
      expect((await workflowCall(bda)).status).toBe(200);
      expect((await workflowCall('tgb_not-a-key')).status).toBe(401);
    });
    expect(panels).toBeGreaterThanOrEqual(10);
    expect(empty).toEqual([]);
  });
});
