import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { createLogger } from '../../../common/logger.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import { modelSchema, type Model } from '../../../common/resources/model.js';
import { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { createManagement } from '../../../gateway/api/management.js';
import { LocalIssuer } from '../../../gateway/auth/local-issuer.js';
import { loadGatewayConfig } from '../../../gateway/config.js';
import type { GatewayServer } from '../../../gateway/server.js';
import { type SharedServices } from '../../../gateway/services.js';
import { manifestModels } from '../../../gateway/v2/model-directory.js';
import { ModelUsageRecorder } from '../../../gateway/v2/model-usage.js';
import { modelAccount } from '../../../common/resources/grant.js';
import { manifestUid } from '../../../common/resources/object-meta.js';
import { freePort, launchChromium, redis } from '../../harness/index.js';
import { apikey, createKey, redisClient } from '../gateway/support.js';
import { modelResource, ServedModels, trainExamples } from '../inference/stack.js';
import { TEST_SIGNING_KEY_FILE } from '../signing.js';
import { aModel } from '../../builders/resources.js';
import { buildCentralGateway } from '../../../gateway/central-gateway.js';

/**
 * The panel's Models page in Chromium, over a real gateway and a real MLServer: a served model
 * with the calls just made drawn in its charts and a call that works when pasted into a shell, and
 * a broken one that says what to fix. The test stands in for the operator's status writer.
 */
const run = promisify(execFile);
const log = createLogger('models-page-test', 'silent');

let stateDir: string;
let models: string;
let served: ServedModels;
let gateway: GatewayServer;
let base: string;
let browser: Browser;
let rc: ReturnType<typeof redisClient>;
let token: string;

beforeAll(async () => {
  const r = await redis('models-page');
  rc = redisClient(r.url);
  stateDir = await mkdtemp(path.join(tmpdir(), 'tollgate-models-page-'));
  models = await trainExamples(['iris']);
  const manifests = new ManifestDir(stateDir, () => undefined).collection<Model>('models', modelSchema);
  const folder = path.join(models, 'model-iris');
  const iris = modelResource('model-iris', pathToFileURL(folder).href);
  await manifests.put(iris);
  served = new ServedModels(path.join(stateDir, 'runtimes'), {}, rc);
  await served.serve(iris, folder);
  const settings = JSON.parse(await readFile(path.join(folder, 'model-settings.json'), 'utf8')) as {
    inputs: Array<{ name: string; datatype: 'FP32'; shape: number[] }>;
  };
  const now = new Date().toISOString();
  await manifests.put({
    ...iris,
    status: {
      phase: 'Ready',
      replicas: 1,
      readyReplicas: 1,
      inputs: settings.inputs.map(({ name, datatype, shape }) => ({ name, datatype, shape })),
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: now, reason: 'Serving', message: '' },
      ],
    },
  });
  await manifests.put({
    ...modelResource('model-broken', 's3://models/broken'),
    status: {
      phase: 'Failed',
      readyReplicas: 0,
      conditions: [
        {
          type: 'SettingsValid',
          status: 'False',
          lastTransitionTime: now,
          reason: 'SettingsInvalid',
          message: 'model-settings.json names "model-other"; set "name" to "model-broken"',
        },
      ],
    },
  });

  await manifests.put({
    ...aModel(
      'model-canary',
      {
        versions: [
          { name: '1', storageUri: 's3://models/canary/1' },
          { name: '2', storageUri: 's3://models/canary/2' },
          { name: '3', storageUri: 's3://models/canary/3' },
        ],
        traffic: [
          { version: '2', percent: 10 },
          { version: '3', cohort: { identities: ['acme'] } },
        ],
      },
      { namespace: 'default' },
    ),
    status: {
      phase: 'Ready',
      defaultVersion: '1',
      versions: [
        { name: '1', phase: 'Ready', traffic: 90, readyReplicas: 2 },
        { name: '2', phase: 'Loading', traffic: 10, readyReplicas: 0 },
        { name: '3', phase: 'Ready', traffic: 0, cohort: 'identities acme', readyReplicas: 1 },
        { name: '0', phase: 'Draining', traffic: 0, readyReplicas: 1 },
      ],
    },
  });

  await manifests.put({
    ...aModel(
      'model-rolling',
      {
        versions: ['1', '2', '3'].map((name) => ({ name, storageUri: `s3://models/rolling/${name}` })),
        shadow: { version: '3', percent: 25 },
        rollout: { version: '2', steps: [10, 50] },
      },
      { namespace: 'default' },
    ),
    status: {
      phase: 'Ready',
      defaultVersion: '1',
      versions: [
        { name: '1', phase: 'Ready', traffic: 50, readyReplicas: 1 },
        { name: '2', phase: 'Ready', traffic: 50, readyReplicas: 1 },
        { name: '3', phase: 'Ready', traffic: 0, readyReplicas: 1 },
      ],
      rollout: {
        version: '2',
        phase: 'Progressing',
        step: 1,
        weight: 50,
        message: 'step 2 of 2: "2" takes 50% of the calls',
      },
    },
  });
  // The shadow's copies as the gateways count them (every replica's, in Redis).
  // Kept under the Model's namespace, name and uid (a manifest's own: manifest-<name>): what
  // another team's Model of that name counted before (it gave the name up, 'default' took it), or
  // an earlier Model of this name here, is not this Model's.
  const rollingAccount = modelAccount('default', 'model-rolling', manifestUid('model-rolling'));
  const shadowFigures = new ModelUsageRecorder(rc, log, 60_000);
  for (let i = 0; i < 8; i++) shadowFigures.recordShadow(rollingAccount, 'agreed', 12, 10);
  shadowFigures.recordShadow(rollingAccount, 'disagreed', 16, 10);
  shadowFigures.recordShadow(rollingAccount, 'disagreed', 16, 10);
  shadowFigures.recordShadow(rollingAccount, 'failed', 30, 10);
  for (let i = 0; i < 5; i++) shadowFigures.recordShadow('earlier-team/model-rolling', 'failed', 30, 10);
  for (let i = 0; i < 5; i++)
    shadowFigures.recordShadow(modelAccount('default', 'model-rolling', 'an-earlier-uid'), 'failed', 30, 10);
  await shadowFigures.stop();

  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const config = loadGatewayConfig({
    env: {},
    overrides: {
      grantSigningKeyFile: TEST_SIGNING_KEY_FILE,
      redisUrl: r.url,
      port,
      host: '127.0.0.1',
      usageFlushMs: 100,
    },
  });
  const management = ({ roles, audit, trust }: SharedServices) =>
    createManagement({
      trust,
      redis: rc,
      workflows: new WorkflowRoutes(rc, trust.verifier),
      log,
      roles,
      audit,
      maxRollGraceSeconds: config.maxRollGraceSeconds,
      keys: { stateDir },
      identity: { local: { stateDir, selfUrl: base } },
      admin: { groupsClaim: 'groups', adminGroups: [] },
    });
  gateway = await buildCentralGateway(config, log, { models: manifestModels(manifests), management });
  await gateway.listen(port, '127.0.0.1');
  token = await (await LocalIssuer.open(stateDir)).mint('dana');
  browser = await launchChromium();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.shutdown();
  await served?.stop();
  rc?.disconnect();
  for (const dir of [stateDir, models])
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** The heights of a sparkline's bars, oldest first. */
const bars = (page: Page, label: string): Promise<number[]> =>
  page.evaluate<number[]>(
    `[...document.querySelector('svg[aria-label="${label}"]').querySelectorAll('rect')].map((r) => Number(r.getAttribute('height')))`,
  );

describe('the Models page', () => {
  it('shows each model’s state, what to fix, its calls in charts, and a call that works when pasted', async () => {
    const { key } = await createKey(rc, 'platform', ['models:inference']);
    const infer = (data: number[]) =>
      fetch(`${base}/v2/models/model-iris/infer`, {
        method: 'POST',
        headers: { ...apikey(key), 'content-type': 'application/json' },
        body: JSON.stringify({
          inputs: [{ name: 'features', datatype: 'FP32', shape: [1, data.length], data }],
        }),
      });
    for (let i = 0; i < 4; i++) expect((await infer([5.1, 3.5, 1.4, 0.2])).status).toBe(200);
    expect((await infer([1, 2, 3])).status).toBe(400);
    await new Promise((r) => setTimeout(r, 300)); // one usage flush

    const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
    await page.goto(`${base}/panel/#token=${token}`);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByRole('link', { name: 'Models' }).click();
    await page.getByRole('heading', { name: 'Models', exact: true }).waitFor();

    const iris = page.locator('article[data-model="model-iris"]');
    await iris.waitFor();
    const text = (await iris.textContent()) ?? '';
    expect(text).toContain('Ready');
    expect(text).toContain('1/1 ready');
    expect(text).toContain('one version (100% of calls)');
    expect(text).toContain('features FP32 [-1,4]');
    expect(text).toContain('Calls per minute (5 in the last hour)');
    expect(text).toContain('Errors per minute (1)');
    // The charts draw the calls just made: the last minute's bar stands above the empty ones.
    const calls = await bars(page, 'calls of model-iris');
    expect(calls).toHaveLength(60);
    expect(Math.max(...calls)).toBeGreaterThan(1);
    expect(Math.max(...(await bars(page, 'errors of model-iris')))).toBeGreaterThan(1);
    const shot = await iris.screenshot({ path: '/tmp/panel-models.png' });
    expect(shot.length).toBeGreaterThan(5_000);

    const broken = page.locator('article[data-model="model-broken"]');
    expect(await broken.getAttribute('data-phase')).toBe('Failed');
    expect(await broken.getByRole('status').textContent()).toBe(
      'SettingsInvalid: model-settings.json names "model-other"; set "name" to "model-broken"',
    );
    expect(await broken.locator('pre').count()).toBe(0);

    // A model with versions lists each, its phase, ready replicas and share of calls.
    const canary = page.locator('article[data-model="model-canary"] ul.versions li');
    expect(await canary.allTextContents()).toEqual([
      '1 Ready, 2 ready, 90% of calls (default)',
      '2 Loading, 0 ready, 10% of calls',
      '3 Ready, 1 ready, every call of identities acme',
      '0 Draining, 1 ready, 0% of calls',
    ]);

    // A rollout in progress, and a shadow's agreement with the serving version.
    const rolling = page.locator('article[data-model="model-rolling"]');
    expect(await rolling.locator('.model-rollout').getAttribute('data-phase')).toBe('Progressing');
    expect(await rolling.locator('.model-rollout').textContent()).toBe(
      'Progressing 2 at 50% step 2 of 2: "2" takes 50% of the calls',
    );
    expect(await rolling.locator('.model-shadow').textContent()).toBe(
      '3 gets 25% of calls as copies: 11 in the last hour, 80.0% agreed, 12.8 ms mean vs 10.0 ms serving, 1 failed',
    );

    // The call, pasted into a shell with a key in TOLLGATE_KEY, gets the model's answer.
    const command = (await iris.locator('pre').textContent()) ?? '';
    expect(command).toContain(`${base}/v2/models/model-iris/infer`);
    const { stdout } = await run('bash', ['-c', command], { env: { ...process.env, TOLLGATE_KEY: key } });
    expect(JSON.parse(stdout)).toMatchObject({ model_name: 'model-iris', outputs: [{ name: 'predict' }] });
    await page.context().close();
  });
});
