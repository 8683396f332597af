import { cp, mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { modelManifest } from '../../builders/resources.js';
import { redis } from '../../harness/index.js';
import { steadyLoad } from '../../harness/steady-load.js';
import { startDev, until, type Dev } from './dev-process.js';
import { trainExamples } from './stack.js';

interface VersionStatus {
  name: string;
  phase: string;
  traffic?: number;
  url?: string;
  message?: string;
}
interface Status {
  phase?: string;
  defaultVersion?: string;
  versions?: VersionStatus[];
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
}

/**
 * Versions in standalone mode (`tollgate dev`), each served by a local MLServer of its own: the
 * versioned V2 paths, the default behind the unversioned ones, and a canary shift, a promotion, a
 * rollback and a version's removal made through the platform `models` resource while clients keep
 * calling, counting every answer.
 */
describe('model versions (standalone)', () => {
  let work: string;
  let state: string;
  let dev: Dev | undefined;
  let base: string;
  let key: string;
  const uri = (version: string) => `file://${path.join(work, 'iris', version)}`;
  const request = () => readFile(path.join(work, 'requests', 'model-iris.json'));

  const status = async (name = 'model-iris'): Promise<Status> => {
    const doc = parse(await readFile(path.join(state, 'models', `${name}.yaml`), 'utf8')) as {
      status?: Status;
    };
    return doc.status ?? {};
  };
  const call = (method: string, p: string, body?: Buffer | string) =>
    fetch(`${base}${p}`, {
      method,
      headers: { authorization: `Apikey ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body }),
    });
  const json = async (res: Response): Promise<Record<string, unknown>> =>
    (await res.json()) as Record<string, unknown>;
  const putSpec = async (spec: Record<string, unknown>): Promise<Response> =>
    call('PUT', '/events/platform/api/v1/models/model-iris', JSON.stringify({ spec }));
  const versions = (names: string[]) => names.map((name) => ({ name, storageUri: uri(name) }));

  beforeAll(async () => {
    const r = await redis();
    work = await trainExamples(['iris']);
    // Two versions of one model: the same estimator, each folder served as its own version.
    for (const v of ['1', '2'])
      await cp(path.join(work, 'model-iris'), path.join(work, 'iris', v), { recursive: true });
    state = await mkdtemp(path.join(tmpdir(), 'tollgate-versions-'));
    await mkdir(path.join(state, 'models'));
    await writeFile(
      path.join(state, 'models', 'model-iris.yaml'),
      modelManifest('model-iris', { versions: versions(['1', '2']), defaultVersion: '1' }),
    );
    dev = await startDev(state, r.url);
    base = dev.base;
    key = await dev.key(['editor']);
    await until('both versions ready', async () => {
      const s = await status();
      return s.versions?.length === 2 && s.versions.every((v) => v.phase === 'Ready') ? true : undefined;
    });
  }, 300_000);

  afterAll(async () => {
    await dev?.stop();
    for (const dir of [state, work]) if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  test('each version answers at its own path; the unversioned paths serve the default', async () => {
    const s = await status();
    expect(s.defaultVersion).toBe('1');
    expect(s.phase).toBe('Ready');
    expect(s.versions?.map((v) => [v.name, v.phase, v.traffic])).toEqual([
      ['1', 'Ready', 100],
      ['2', 'Ready', 0],
    ]);
    expect(new Set(s.versions?.map((v) => v.url)).size).toBe(2);

    const meta = await call('GET', '/v2/models/model-iris');
    expect(meta.status).toBe(200);
    expect(await json(meta)).toMatchObject({ name: 'model-iris', versions: ['1', '2'] });
    const meta2 = await call('GET', '/v2/models/model-iris/versions/2');
    expect(await json(meta2)).toMatchObject({ name: 'model-iris', versions: ['2'] });
    const ready2 = await call('GET', '/v2/models/model-iris/versions/2/ready');
    expect([ready2.status, await json(ready2)]).toEqual([
      200,
      { name: 'model-iris', version: '2', ready: true },
    ]);

    const v2 = await call('POST', '/v2/models/model-iris/versions/2/infer', await request());
    expect(v2.status).toBe(200);
    expect(await json(v2)).toMatchObject({ model_name: 'model-iris', model_version: '2' });
    for (let i = 0; i < 10; i++) {
      const res = await call('POST', '/v2/models/model-iris/infer', await request());
      expect((await json(res)).model_version).toBe('1');
    }

    const listed = await json(await call('GET', '/v2/models'));
    expect(listed.models).toEqual([{ name: 'model-iris', ready: true, versions: ['1', '2'] }]);
    const index = await call('POST', '/v2/repository/index', '{}');
    expect(await index.json()).toEqual([
      { name: 'model-iris', version: '1', state: 'READY', reason: '' },
      { name: 'model-iris', version: '2', state: 'READY', reason: '' },
    ]);
  });

  test('an unknown version is 404 with the versions there are; a bad split is refused with its field', async () => {
    const unknown = await call('POST', '/v2/models/model-iris/versions/7/infer', await request());
    expect([unknown.status, await json(unknown)]).toEqual([
      404,
      {
        code: 'model_version_not_found',
        error: "model 'model-iris' has no version '7'; its versions are 1, 2",
      },
    ]);
    const bad = await putSpec({ versions: versions(['1', '2']), traffic: [{ version: '3', percent: 10 }] });
    expect([bad.status, await json(bad)]).toEqual([
      400,
      {
        code: 'invalid_field',
        field: 'spec.traffic',
        error: 'spec.traffic names version "3", which is not one of spec.versions (1, 2)',
      },
    ]);
    const both = await putSpec({ storageUri: uri('1'), versions: versions(['1']) });
    expect([both.status, (await json(both)).field]).toEqual([400, 'spec.storageUri']);
    expect((await status()).defaultVersion).toBe('1');
  });

  test('a canary shift, a promotion and a rollback, under steady load, lose no call', async () => {
    const body = await request();
    const load = steadyLoad(async () => {
      const res = await call('POST', '/v2/models/model-iris/infer', body);
      const text = await res.text();
      const version =
        res.status === 200 ? String((JSON.parse(text) as { model_version?: string }).model_version) : '';
      return { status: res.status, label: version, detail: text };
    });
    try {
      await load.settles(['1']);
      // Canary: version 2 takes half of the unversioned calls.
      expect(
        (await putSpec({ versions: versions(['1', '2']), traffic: [{ version: '2', percent: 50 }] })).status,
      ).toBe(200);
      await load.settles(['1', '2'], 200);
      await until(
        'status shows the split',
        async () => {
          const s = await status();
          return s.versions?.map((v) => v.traffic).join(',') === '50,50' ? true : undefined;
        },
        30_000,
      );
      // Promotion: version 2 is the default and takes every call.
      expect((await putSpec({ versions: versions(['1', '2']), defaultVersion: '2' })).status).toBe(200);
      await load.settles(['2']);
      // Rollback: back to version 1.
      expect((await putSpec({ versions: versions(['1', '2']), defaultVersion: '1' })).status).toBe(200);
      await load.settles(['1']);
    } finally {
      const tally = await load.stop();
      process.stdout.write(`versions: ${JSON.stringify(tally)}\n`);
      expect(tally.failures).toEqual([]);
      expect(Object.keys(tally.byStatus)).toEqual(['200']);
      expect(tally.total).toBeGreaterThan(300);
    }
  }, 240_000);

  test('a version removed from the spec stops taking calls, drains, then goes; nothing is lost', async () => {
    const body = await request();
    const url2 = (await status()).versions?.find((v) => v.name === '2')?.url;
    expect(url2).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const load = steadyLoad(async () => {
      const res = await call('POST', '/v2/models/model-iris/infer', body);
      return { status: res.status, label: '', detail: await res.text() };
    });
    try {
      expect((await putSpec({ versions: versions(['1']) })).status).toBe(200);
      const draining = await until(
        'version 2 draining',
        async () => {
          const v = (await status()).versions?.find((x) => x.name === '2');
          return v?.phase === 'Draining' ? v : undefined;
        },
        30_000,
      );
      expect(draining.message).toMatch(/takes no new calls/);
      // Out of the routes at once: its path is now an unknown version.
      await until(
        'version 2 unknown',
        async () =>
          (await call('POST', '/v2/models/model-iris/versions/2/infer', body)).status === 404
            ? true
            : undefined,
        30_000,
      );
      // Still running while it drains, then gone.
      expect((await fetch(`${url2}/v2/health/live`)).status).toBe(200);
      await until(
        'version 2 gone',
        async () => {
          const s = await status();
          return s.versions?.map((v) => v.name).join(',') === '1' ? true : undefined;
        },
        60_000,
      );
      await until(
        'its MLServer stopped',
        async () =>
          (await fetch(`${url2}/v2/health/live`).then(
            () => false,
            () => true,
          ))
            ? true
            : undefined,
        30_000,
      );
    } finally {
      const tally = await load.stop();
      expect(tally.failures).toEqual([]);
      expect(tally.total).toBeGreaterThan(50);
    }
  }, 180_000);

  test('a model given versions goes on answering from its old runtime until the new version is ready', async () => {
    // model-conv: the iris estimator under its own name, first without versions.
    const folder = path.join(work, 'conv');
    await cp(path.join(work, 'model-iris'), folder, { recursive: true });
    const settingsFile = path.join(folder, 'model-settings.json');
    const settings = JSON.parse(await readFile(settingsFile, 'utf8')) as Record<string, unknown>;
    await writeFile(settingsFile, JSON.stringify({ ...settings, name: 'model-conv' }));
    const created = await call(
      'POST',
      '/events/platform/api/v1/models',
      JSON.stringify({ metadata: { name: 'model-conv' }, spec: { storageUri: `file://${folder}` } }),
    );
    expect(created.status).toBe(201);
    await until('model-conv ready', async () =>
      (await status('model-conv')).phase === 'Ready' ? true : undefined,
    );
    const body = await request();
    const load = steadyLoad(async () => {
      const res = await call('POST', '/v2/models/model-conv/infer', body);
      const text = await res.text();
      const version =
        res.status === 200
          ? String((JSON.parse(text) as { model_version?: string }).model_version ?? '')
          : '';
      return { status: res.status, label: version, detail: text };
    });
    try {
      await load.settles(['']);
      const edited = await call(
        'PUT',
        '/events/platform/api/v1/models/model-conv',
        JSON.stringify({ spec: { versions: [{ name: '1', storageUri: `file://${folder}` }] } }),
      );
      expect(edited.status).toBe(200);
      await load.settles(['1'], 30, 120_000);
      await until(
        'the unnamed runtime gone',
        async () => {
          const s = await status('model-conv');
          return s.versions?.map((v) => `${v.name}:${v.phase}`).join(',') === '1:Ready' ? true : undefined;
        },
        60_000,
      );
    } finally {
      const tally = await load.stop();
      expect(tally.failures).toEqual([]);
      expect(tally.byLabel['1']).toBeGreaterThan(0);
    }
  }, 240_000);

  test('a hand-written manifest that breaks the rules gets a status saying what to fix', async () => {
    await writeFile(
      path.join(state, 'models', 'model-odd.yaml'),
      modelManifest('model-odd', { versions: [{ name: '1', storageUri: uri('1') }], defaultVersion: '4' }),
    );
    const s = await until(
      'model-odd refused',
      async () => {
        const got = await status('model-odd');
        return got.phase === 'Failed' ? got : undefined;
      },
      30_000,
    );
    expect(s.conditions?.find((c) => c.type === 'SettingsValid')).toMatchObject({
      status: 'False',
      reason: 'VersionsInvalid',
      message: 'spec.defaultVersion: spec.defaultVersion "4" must name one of spec.versions (1)',
    });
  });
});
