import type { ModelSpec } from '../../../common/resources/model.js';
import { servedVersions, versionProblems } from '../../../common/resources/model-versions.js';
import { splitTraffic } from '../../../gateway/v2/versions.js';

const two: ModelSpec = {
  versions: [
    { name: '1', storageUri: 's3://b/iris/1' },
    { name: '2', storageUri: 's3://b/iris/2' },
  ],
};

describe('a Model’s versions', () => {
  test('an unversioned Model is one unnamed version under its own name, taking every call', () => {
    expect(servedVersions('model-iris', { storageUri: 's3://b/iris' })).toEqual([
      { name: undefined, storageUri: 's3://b/iris', workload: 'model-iris', isDefault: true, percent: 100 },
    ]);
  });

  test('the default is the first version unless named; canaries take their share, the default the rest', () => {
    expect(servedVersions('model-iris', two).map((v) => [v.workload, v.isDefault, v.percent])).toEqual([
      ['model-iris-1', true, 100],
      ['model-iris-2', false, 0],
    ]);
    const canary = servedVersions('model-iris', { ...two, traffic: [{ version: '2', percent: 10 }] });
    expect(canary.map((v) => v.percent)).toEqual([90, 10]);
    const promoted = servedVersions('model-iris', { ...two, defaultVersion: '2' });
    expect(promoted.map((v) => [v.name, v.isDefault, v.percent])).toEqual([
      ['1', false, 0],
      ['2', true, 100],
    ]);
  });

  test('the CRD’s cross-field rules, each with the field and what to change', () => {
    expect(versionProblems('model-iris', two)).toEqual([]);
    expect(versionProblems('model-iris', { ...two, storageUri: 's3://b/x' })).toEqual([
      {
        field: 'spec.storageUri',
        message: 'set either spec.storageUri (one unnamed version) or spec.versions, not both',
      },
    ]);
    expect(versionProblems('model-iris', {})[0]?.field).toBe('spec.storageUri');
    // Tollgate's own settings of the runtime (where it listens, behind a sidecar on loopback only).
    const env = [
      { name: 'MLSERVER_PARALLEL_WORKERS', value: '2' },
      { name: 'MLSERVER_HOST', value: '0.0.0.0' },
      { name: 'TOLLGATE_PULLED', value: 'x' },
    ];
    expect(versionProblems('model-iris', { ...two, env })).toEqual([
      {
        field: 'spec.env',
        message: expect.stringMatching(
          /^spec\.env may not set MLSERVER_HOST, TOLLGATE_PULLED: Tollgate sets/,
        ),
      },
    ]);
    expect(versionProblems('model-iris', { ...two, env: env.slice(0, 1) })).toEqual([]);
    expect(versionProblems('model-iris', { ...two, defaultVersion: '3' })).toEqual([
      {
        field: 'spec.defaultVersion',
        message: 'spec.defaultVersion "3" must name one of spec.versions (1, 2)',
      },
    ]);
    expect(versionProblems('model-iris', { ...two, traffic: [{ version: '9', percent: 5 }] })).toEqual([
      {
        field: 'spec.traffic',
        message: 'spec.traffic names version "9", which is not one of spec.versions (1, 2)',
      },
    ]);
    expect(
      versionProblems('model-iris', { ...two, traffic: [{ version: '1', percent: 5 }] })[0]?.message,
    ).toMatch(/"1" is the default version/);
    const three: ModelSpec = { versions: [...(two.versions ?? []), { name: '3', storageUri: 's3://b/3' }] };
    const over = versionProblems('model-iris', {
      ...three,
      traffic: [
        { version: '2', percent: 60 },
        { version: '3', percent: 50 },
      ],
    });
    expect(over).toEqual([
      {
        field: 'spec.traffic',
        message: 'spec.traffic percentages add up to 110; they must add up to at most 100',
      },
    ]);
    const long = `model-${'a'.repeat(50)}`;
    expect(
      versionProblems(long, { versions: [{ name: 'v1234567890', storageUri: 's3://b/x' }] })[0]?.message,
    ).toMatch(/exceed 62 characters/);
    expect(
      versionProblems('model-iris', {
        versions: [...(two.versions ?? []), { name: '1', storageUri: 's3://b/y' }],
      }),
    ).toEqual([{ field: 'spec.versions', message: 'version "1" is listed twice' }]);
  });

  test('the traffic split draws each version in proportion to its percentage, never one at 0%', () => {
    const versions = [
      { name: '1', percent: 90 },
      { name: '2', percent: 10 },
      { name: '3', percent: 0 },
    ];
    const counts = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      const v = splitTraffic(versions, i / 1000);
      counts.set(v?.name ?? '', (counts.get(v?.name ?? '') ?? 0) + 1);
    }
    expect(Object.fromEntries(counts)).toEqual({ '1': 900, '2': 100 });
    expect(splitTraffic(versions, 0.999999)?.name).toBe('2');
    expect(splitTraffic([{ name: '1', percent: 0 }], 0.5)).toBeUndefined();
  });
});
