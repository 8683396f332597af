import { execFile } from 'node:child_process';
import { cp, mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { modelManifest } from '../../builders/resources.js';
import { redis, venv } from '../../harness/index.js';
import { redisClient } from '../gateway/support.js';
import { steadyLoad } from '../../harness/steady-load.js';
import { startDev, until, type Dev } from './dev-process.js';
import { trainExamples } from './stack.js';

const run = promisify(execFile);

interface Status {
  phase?: string;
  defaultVersion?: string;
  versions?: Array<{ name: string; phase: string; traffic?: number; cohort?: string }>;
  rollout?: {
    phase: string;
    weight?: number;
    step?: number;
    calls?: number;
    errorRate?: number;
    cohort?: string;
    message?: string;
  };
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
}

/**
 * Rollouts you can trust, in standalone mode on real MLServer runtimes: shadow traffic (copies
 * compared, never returned) and automatic canary analysis (a canary that fails is rolled back on
 * its own with no failed call for the callers; a good one is promoted step by step).
 *
 * Four versions of the iris model: 1 and 2 the same estimator, "stump" a one-split tree that
 * answers differently, and "broken" an estimator fitted on three features, which fails every call
 * the gateway's checks pass (the model declares four).
 */
describe('rollouts (standalone)', () => {
  let work: string;
  let state: string;
  let dev: Dev | undefined;
  let base: string;
  let key: string;
  let body: Buffer;
  let redisUrl: string;
  const names = ['1', '2', 'stump', 'broken'];
  const uri = (version: string) => `file://${path.join(work, 'iris', version)}`;
  let versions: Array<{ name: string; storageUri: string }>;

  const status = async (): Promise<Status> =>
    (parse(await readFile(path.join(state, 'models', 'model-iris.yaml'), 'utf8')) as { status?: Status })
      .status ?? {};
  const call = (method: string, p: string, payload?: Buffer | string) =>
    fetch(`${base}${p}`, {
      method,
      headers: { authorization: `Apikey ${key}`, 'content-type': 'application/json' },
      ...(payload === undefined ? {} : { body: payload }),
    });
  const putSpec = async (spec: Record<string, unknown>): Promise<Response> =>
    call('PUT', '/events/platform/api/v1/models/model-iris', JSON.stringify({ spec }));
  /** The value of one exact series in the gateway's /metrics, 0 when absent. */
  const metric = async (series: string): Promise<number> => {
    const text = await (await fetch(`${base}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? 0 : Number(line.slice(series.length + 1));
  };
  const infer = async () => {
    const res = await call('POST', '/v2/models/model-iris/infer', body);
    const text = await res.text();
    const version =
      res.status === 200 ? String((JSON.parse(text) as { model_version?: string }).model_version) : '';
    return { status: res.status, label: version, detail: text };
  };

  beforeAll(async () => {
    const r = await redis();
    redisUrl = r.url;
    work = await trainExamples(['iris']);
    for (const v of names)
      await cp(path.join(work, 'model-iris'), path.join(work, 'iris', v), { recursive: true });
    // The two odd versions: same settings (four features declared), different estimators.
    await run(venv().python, [
      '-c',
      [
        'import sys, joblib',
        'from sklearn.datasets import load_iris',
        'from sklearn.linear_model import LogisticRegression',
        'from sklearn.tree import DecisionTreeClassifier',
        'X, y = load_iris(return_X_y=True)',
        'joblib.dump(DecisionTreeClassifier(max_depth=1, random_state=0).fit(X, y), sys.argv[1])',
        'joblib.dump(LogisticRegression(max_iter=500).fit(X[:, :3], y), sys.argv[2])',
      ].join('\n'),
      path.join(work, 'iris', 'stump', 'model.joblib'),
      path.join(work, 'iris', 'broken', 'model.joblib'),
    ]);
    versions = names.map((name) => ({ name, storageUri: uri(name) }));
    body = await readFile(path.join(work, 'requests', 'model-iris.json'));
    state = await mkdtemp(path.join(tmpdir(), 'tollgate-rollouts-'));
    await mkdir(path.join(state, 'models'));
    await writeFile(
      path.join(state, 'models', 'model-iris.yaml'),
      modelManifest('model-iris', {
        versions,
        defaultVersion: '1',
        shadow: { version: '2' },
        logging: { sampleRate: 1 },
      }),
    );
    dev = await startDev(state, r.url, { env: { TOLLGATE_PAYLOAD_LOG_INTERVAL_MS: '200' } });
    base = dev.base;
    key = await dev.key(['editor']);
    await until('every version ready', async () => {
      const s = await status();
      return s.versions?.length === 4 && s.versions.every((v) => v.phase === 'Ready') ? true : undefined;
    });
  }, 400_000);

  afterAll(async () => {
    await dev?.stop();
    for (const dir of [state, work]) if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  test('a shadow gets a copy of every call, never answers one, and its agreement is counted, shown and logged', async () => {
    const series = (version: string, outcome: string) =>
      `tollgate_model_shadow_calls_total{model="model-iris",version="${version}",outcome="${outcome}"}`;
    for (let i = 0; i < 20; i++) {
      const got = await infer();
      expect([got.status, got.label]).toEqual([200, '1']);
    }
    await until(
      '20 copies agreed',
      async () => ((await metric(series('2', 'agreed'))) >= 20 ? true : undefined),
      30_000,
    );
    expect(await metric(series('2', 'agreed'))).toBe(20);
    expect(await metric(series('2', 'disagreed'))).toBe(0);
    expect(await metric(`tollgate_model_shadow_duration_seconds_count{model="model-iris",version="2"}`)).toBe(
      20,
    );

    // A shadow that answers otherwise disagrees; one that fails is counted as failed. Callers see neither.
    expect(
      (
        await putSpec({
          versions,
          defaultVersion: '1',
          shadow: { version: 'stump' },
          logging: { sampleRate: 1 },
        })
      ).status,
    ).toBe(200);
    await until('the stump is the shadow', async () => {
      await infer();
      return (await metric(series('stump', 'disagreed'))) > 0 ? true : undefined;
    });
    expect(await metric(series('stump', 'agreed'))).toBe(0);
    expect(
      (
        await putSpec({
          versions,
          defaultVersion: '1',
          shadow: { version: 'broken', percent: 100 },
          logging: { sampleRate: 1 },
        })
      ).status,
    ).toBe(200);
    await until('the broken version is the shadow', async () => {
      const got = await infer();
      expect([got.status, got.label]).toEqual([200, '1']);
      return (await metric(series('broken', 'failed'))) > 0 ? true : undefined;
    });

    // The Models page, from every replica's figures in Redis.
    const token = await dev!.token();
    const page = await until('the Models page shows the copies', async () => {
      const res = await fetch(`${base}/api/v1/models`, { headers: { authorization: `Bearer ${token}` } });
      const item = ((await res.json()) as { items: Array<Record<string, unknown>> }).items.find(
        (m) => m['name'] === 'model-iris',
      );
      const shadow = item?.['shadow'] as
        { calls: number; agreed: number; failed: number; agreementRate: number } | undefined;
      return shadow !== undefined && shadow.agreed >= 20 && shadow.failed > 0 ? shadow : undefined;
    });
    expect(page).toMatchObject({ version: 'broken', percent: 100 });
    expect(page.agreementRate).toBeGreaterThan(0);
    expect(page.agreementRate).toBeLessThan(1);

    // Logged beside the calls they copy, with the serving version and the verdict.
    const logs = path.join(state, 'payload-logs');
    const shadowRecords = await until('shadow records in the payload log', async () => {
      const files = (await readdir(logs, { recursive: true })).filter((f) => f.endsWith('.jsonl'));
      const lines: Array<Record<string, unknown>> = [];
      for (const f of files)
        for (const l of (await readFile(path.join(logs, f), 'utf8')).trim().split('\n'))
          lines.push(JSON.parse(l) as Record<string, unknown>);
      const copies = lines.filter((l) => l['shadowOf'] !== undefined);
      return copies.some((c) => c['version'] === 'stump') && copies.some((c) => c['version'] === 'broken')
        ? lines
        : undefined;
    });
    const served = shadowRecords.filter((l) => l['shadowOf'] === undefined);
    const copies = shadowRecords.filter((l) => l['shadowOf'] !== undefined);
    expect(served.every((l) => l['version'] === '1' && l['status'] === 200)).toBe(true);
    const agreed = copies.find((c) => c['version'] === '2');
    expect(agreed).toMatchObject({ status: 200, shadowOf: { version: '1', agreed: true } });
    expect(served.some((s) => s['requestId'] === agreed?.['requestId'])).toBe(true);
    expect(copies.find((c) => c['version'] === 'stump')).toMatchObject({
      shadowOf: { version: '1', agreed: false },
    });
    const failed = copies.find((c) => c['version'] === 'broken');
    expect(failed?.['status']).not.toBe(200);
    expect(failed?.['shadowOf']).toEqual({ version: '1', agreed: false });
  }, 180_000);

  test('only the calls the split drew are the figures a rollout is judged on', async () => {
    for (let i = 0; i < 5; i++) {
      expect((await call('POST', '/v2/models/model-iris/versions/broken/infer', body)).status).toBe(400);
      expect((await call('POST', '/v2/models/model-iris/versions/stump/infer', body)).status).toBe(200);
    }
    expect((await infer()).status).toBe(200);
    const rc = redisClient(redisUrl);
    try {
      const fields = await until('the figures flushed', async () => {
        // Kept under the Model's namespace, name and uid (a manifest's: manifest-<name>).
        const keys = await rc.keys('tg:vfig:default/model-iris/manifest-model-iris:*');
        const all = (await Promise.all(keys.map((k) => rc.hkeys(k)))).flat();
        return all.includes('1|c') ? all : undefined;
      });
      // Named versions (and the shadow's copies) weigh nothing; the default's drawn calls do.
      expect(fields.filter((f) => f.startsWith('broken|') || f.startsWith('stump|'))).toEqual([]);
    } finally {
      rc.disconnect();
    }
  });

  test('a canary that fails is rolled back on its own, and no caller sees a failed call', async () => {
    const load = steadyLoad(infer);
    try {
      await load.settles(['1']);
      const res = await putSpec({
        versions,
        defaultVersion: '1',
        rollout: { version: 'broken', steps: [50], stepSeconds: 5, minCalls: 10, maxErrorRate: 0.1 },
      });
      expect(res.status).toBe(200);
      const s = await until(
        'rolled back',
        async () => {
          const now = await status();
          return now.rollout?.phase === 'RolledBack' ? now : undefined;
        },
        60_000,
      );
      expect(s.rollout).toMatchObject({ phase: 'RolledBack', weight: 0 });
      expect(s.rollout?.errorRate).toBeGreaterThan(0.1);
      expect(s.rollout?.message).toContain('above spec.rollout.maxErrorRate 10%');
      expect(s.conditions?.find((c) => c.type === 'Rollout')).toMatchObject({
        status: 'False',
        reason: 'RolledBack',
      });
      expect(s.versions?.find((v) => v.name === 'broken')?.traffic).toBe(0);
      expect(
        (await metric(
          'tollgate_model_fallbacks_total{model="model-iris",version="broken",code="model_rejected_input"}',
        )) +
          (await metric(
            'tollgate_model_fallbacks_total{model="model-iris",version="broken",code="inference_error"}',
          )),
      ).toBeGreaterThanOrEqual(10);
      // Its own failed tries are on its own series; the callers' answers all came from version 1.
      await load.settles(['1']);
      expect(dev!.log()).toContain('RolledBack');
    } finally {
      const tally = await load.stop();
      process.stdout.write(`bad canary: ${JSON.stringify(tally)}\n`);
      expect(tally.failures).toEqual([]);
      expect(Object.keys(tally.byStatus)).toEqual(['200']);
      expect(Object.keys(tally.byLabel)).toEqual(['1']);
    }
  }, 120_000);

  test('a bad canary limited to one identity: only its calls reach it, it is rolled back on its own, and no caller sees a failure', async () => {
    const token = await dev!.token();
    const made = await fetch(`${base}/api/v1/identities`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'acme' }),
    });
    expect(made.status).toBe(201);
    const acme = await dev!.key(['editor'], 'platform', { identity: 'acme' });
    // Every answer acme got, checked at the end (a probe's failed expectation only retries it).
    const acmeAnswers: string[] = [];
    const asAcme = async () => {
      const res = await fetch(`${base}/v2/models/model-iris/infer`, {
        method: 'POST',
        headers: { authorization: `Apikey ${acme}`, 'content-type': 'application/json' },
        body,
      });
      const text = await res.text();
      const answer = [
        res.status,
        res.status === 200 ? (JSON.parse(text) as { model_version?: string }).model_version : text,
      ];
      acmeAnswers.push(answer.join(' '));
      return answer;
    };
    // Each call the canary failed and version 1 answered instead.
    const fellBack = async () =>
      (await metric(
        'tollgate_model_fallbacks_total{model="model-iris",version="broken",code="model_rejected_input"}',
      )) +
      (await metric(
        'tollgate_model_fallbacks_total{model="model-iris",version="broken",code="inference_error"}',
      ));
    const fallbacksBefore = await fellBack();
    // Everyone else: a steady load with the other key.
    const load = steadyLoad(infer, 2);
    try {
      await load.settles(['1']);
      const res = await putSpec({
        versions,
        defaultVersion: '1',
        rollout: {
          version: 'broken',
          cohort: { identities: ['acme'] },
          steps: [50],
          stepSeconds: 5,
          minCalls: 10,
          maxErrorRate: 0.1,
        },
      });
      expect(res.status).toBe(200);
      await until('acme reaches the canary', async () => {
        const before = await fellBack();
        expect(await asAcme()).toEqual([200, '1']);
        return (await fellBack()) > before ? true : undefined;
      });
      expect((await status()).rollout).toMatchObject({ phase: 'Progressing', cohort: 'identities acme' });
      // The others' calls, meanwhile, never reach it: none of theirs falls back.
      const quiet = await fellBack();
      const mark = load.mark();
      await until('20 calls of the others', async () => (load.since(mark).length >= 20 ? true : undefined));
      expect(await fellBack()).toBe(quiet);
      // The cohort's own calls judge it, and it is rolled back on its own.
      const back = await until(
        'rolled back',
        async () => {
          expect(await asAcme()).toEqual([200, '1']);
          const now = await status();
          return now.rollout?.phase === 'RolledBack' ? now : undefined;
        },
        60_000,
      );
      expect(back.rollout).toMatchObject({ phase: 'RolledBack', cohort: 'identities acme', weight: 0 });
      expect(back.rollout?.message).toContain('rolled back at step 1 of 1 (cohort: identities acme)');
      expect(back.conditions?.find((c) => c.type === 'Rollout')).toMatchObject({
        status: 'False',
        reason: 'RolledBack',
      });
      expect(back.conditions?.find((c) => c.type === 'Rollout')?.message).toContain('identities acme');
      // Rolled back, the cohort's calls stay with version 1.
      await until('the canary out of the route', async () => {
        const before = await fellBack();
        expect(await asAcme()).toEqual([200, '1']);
        return (await fellBack()) === before ? true : undefined;
      });
      const settled = await fellBack();
      for (let i = 0; i < 5; i++) expect(await asAcme()).toEqual([200, '1']);
      expect(await fellBack()).toBe(settled);
    } finally {
      const tally = await load.stop();
      process.stdout.write(
        `cohort canary: acme ${acmeAnswers.length} calls (${(await fellBack()) - fallbacksBefore} tried on the canary, all answered by 1); the others ${JSON.stringify(tally)}\n`,
      );
      expect(tally.failures).toEqual([]);
      expect(Object.keys(tally.byLabel)).toEqual(['1']);
      expect([...new Set(acmeAnswers)]).toEqual(['200 1']);
    }
  }, 150_000);

  test('a cohort by share of the callers: each key sees one version, call after call', async () => {
    const token = await dev!.token();
    const keys: string[] = [];
    for (let i = 0; i < 16; i++) {
      const created = await fetch(`${base}/api/v1/apikeys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ module: 'platform', roles: ['editor'], name: `cohort ${i}` }),
      });
      expect(created.status).toBe(201);
      keys.push(((await created.json()) as { key: string }).key);
    }
    const versionFor = async (k: string) => {
      const res = await fetch(`${base}/v2/models/model-iris/infer`, {
        method: 'POST',
        headers: { authorization: `Apikey ${k}`, 'content-type': 'application/json' },
        body,
      });
      expect(res.status).toBe(200);
      return String(((await res.json()) as { model_version?: string }).model_version);
    };
    const res = await putSpec({
      versions,
      defaultVersion: '1',
      traffic: [{ version: '2', cohort: { percent: 50 } }],
    });
    expect(res.status).toBe(200);
    await until('version 2 serves its cohort', async () => {
      for (const k of keys) if ((await versionFor(k)) === '2') return true;
      return undefined;
    });
    const seen = new Map<string, Set<string>>();
    for (let round = 0; round < 4; round++)
      for (const k of keys) {
        const v = await versionFor(k);
        seen.set(k, (seen.get(k) ?? new Set()).add(v));
      }
    expect([...seen.values()].every((versionsSeen) => versionsSeen.size === 1)).toBe(true);
    const served = new Set([...seen.values()].flatMap((v) => [...v]));
    expect([...served].sort()).toEqual(['1', '2']);
    const s = await status();
    expect(s.versions?.find((v) => v.name === '2')).toMatchObject({
      traffic: 0,
      cohort: '50% of the other callers',
    });
    // A cohort that names no one is refused, with what to change.
    const empty = await putSpec({ versions, defaultVersion: '1', traffic: [{ version: '2', cohort: {} }] });
    expect(empty.status).toBe(400);
    expect(await empty.text()).toContain('spec.traffic[0].cohort names no caller');
  }, 120_000);

  test('a good canary is promoted step by step and becomes the default, losing no call', async () => {
    const load = steadyLoad(infer);
    try {
      const res = await putSpec({
        versions,
        defaultVersion: '1',
        rollout: { version: '2', steps: [20, 60], stepSeconds: 5, minCalls: 10 },
      });
      expect(res.status).toBe(200);
      const steps = new Set<string>();
      const s = await until(
        'promoted',
        async () => {
          const now = await status();
          if (now.rollout?.phase === 'Progressing') steps.add(`${now.rollout.step}:${now.rollout.weight}`);
          return now.rollout?.phase === 'Promoted' ? now : undefined;
        },
        90_000,
      );
      expect(steps.has('1:60')).toBe(true);
      expect(s.defaultVersion).toBe('2');
      expect(s.conditions?.find((c) => c.type === 'Rollout')).toMatchObject({
        status: 'True',
        reason: 'Promoted',
      });
      expect(s.versions?.filter((v) => v.traffic !== 0).map((v) => [v.name, v.traffic])).toEqual([
        ['2', 100],
      ]);
      await load.settles(['2']);
      // The Models page names the version served as the default, and the rollout's end.
      const token = await dev!.token();
      const listed = (await (
        await fetch(`${base}/api/v1/models`, { headers: { authorization: `Bearer ${token}` } })
      ).json()) as { items: Array<Record<string, unknown>> };
      expect(listed.items.find((m) => m['name'] === 'model-iris')).toMatchObject({
        defaultVersion: '2',
        rollout: { version: '2', phase: 'Promoted', weight: 100 },
      });
      // The spec is as the user wrote it: the operator changed only the status.
      const manifest = parse(await readFile(path.join(state, 'models', 'model-iris.yaml'), 'utf8')) as {
        spec: { defaultVersion?: string; traffic?: unknown };
      };
      expect([manifest.spec.defaultVersion, manifest.spec.traffic]).toEqual(['1', undefined]);
    } finally {
      const tally = await load.stop();
      process.stdout.write(`good canary: ${JSON.stringify(tally)}\n`);
      expect(tally.failures).toEqual([]);
      expect(Object.keys(tally.byStatus)).toEqual(['200']);
    }
  }, 150_000);
});
