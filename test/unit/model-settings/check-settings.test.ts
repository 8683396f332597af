import { checkModelSettings, checkModelSettingsText } from '../../../common/model-settings/check-settings.js';
import type { SettingsProblem } from '../../../common/model-settings/types.js';

const files = ['model.joblib', 'model-settings.json'];

const npSettings = () => ({
  name: 'model-iris',
  implementation: 'mlserver_sklearn.SKLearnModel',
  parameters: { uri: './model.joblib', content_type: 'np', task_type: 'classification' },
  inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 4] }],
  outputs: [
    { name: 'label', datatype: 'INT64', shape: [-1, 1] },
    { name: 'proba', datatype: 'FP64', shape: [-1, 3] },
  ],
});

function problemsOf(raw: unknown, modelName = 'model-iris'): SettingsProblem[] {
  const r = checkModelSettings(raw, { modelName, files });
  return r.ok ? [] : r.problems;
}

function expectProblem(raw: unknown, path: string, message: RegExp) {
  const problems = problemsOf(raw);
  expect(problems).toContainEqual({ path, message: expect.stringMatching(message) });
}

describe('model-settings.json check', () => {
  test('a correct np file passes and declares its inputs and outputs', () => {
    const r = checkModelSettings(npSettings(), { modelName: 'model-iris', files });
    expect(r).toEqual({
      ok: true,
      settings: npSettings(),
      declared: { contentType: 'np', inputs: npSettings().inputs, outputs: npSettings().outputs },
    });
  });

  test('a correct pd file passes', () => {
    const s = {
      ...npSettings(),
      parameters: { uri: 'model.joblib', content_type: 'pd', feature_names: ['city', 'size'] },
      inputs: [
        { name: 'size', datatype: 'BYTES', shape: [-1] },
        { name: 'city', datatype: 'BYTES', shape: [-1] },
      ],
    };
    expect(problemsOf(s)).toEqual([]);
  });

  test('a correct str file passes', () => {
    const s = {
      ...npSettings(),
      parameters: { uri: './model.joblib', content_type: 'str' },
      inputs: [{ name: 'text', datatype: 'BYTES', shape: [-1] }],
    };
    expect(problemsOf(s)).toEqual([]);
  });

  test('invalid JSON names the syntax error', () => {
    const r = checkModelSettingsText('{"name": ', {});
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problems[0]?.message).toMatch(/not valid JSON .*fix the syntax/);
  });

  test('not an object', () => expectProblem([1], '', /JSON object/));

  test('name must equal the Model name and say which to use', () => {
    expectProblem(
      { ...npSettings(), name: 'model-other' },
      'name',
      /is "model-other" but the Model is named "model-iris"; set "name": "model-iris"/,
    );
    expectProblem({ ...npSettings(), name: undefined }, 'name', /add "name": "model-iris"/);
  });

  test('name must have the model-<id> form when no Model name is given', () => {
    const r = checkModelSettings({ ...npSettings(), name: 'Iris' }, { files });
    expect(!r.ok && r.problems).toEqual([{ path: 'name', message: expect.stringMatching(/model-<id>/) }]);
  });

  test('implementation is required and must be a class path', () => {
    expectProblem(
      { ...npSettings(), implementation: undefined },
      'implementation',
      /mlserver_sklearn\.SKLearnModel/,
    );
    expectProblem(
      { ...npSettings(), implementation: 'sklearn model' },
      'implementation',
      /not a Python class path/,
    );
  });

  test('parameters.uri must name a file beside the settings, listing the candidates', () => {
    const s = npSettings();
    s.parameters.uri = './model.pkl';
    expectProblem(
      s,
      'parameters.uri',
      /"\.\/model\.pkl" is not in the model folder; the folder has \.\/model\.joblib/,
    );
    s.parameters.uri = '../other/model.joblib';
    expectProblem(s, 'parameters.uri', /leaves the model folder/);
    s.parameters.uri = 's3://bucket/model.joblib';
    expectProblem(s, 'parameters.uri', /relative to the settings file/);
    s.parameters.uri = '/models/model.joblib';
    expectProblem(s, 'parameters.uri', /relative to the settings file/);
    expectProblem({ ...npSettings(), parameters: { content_type: 'np' } }, 'parameters.uri', /add "uri"/);
    expectProblem({ ...npSettings(), parameters: undefined }, 'parameters', /add a "parameters" object/);
  });

  test('a folder with no model file says to upload it', () => {
    const r = checkModelSettings(npSettings(), { modelName: 'model-iris', files: ['model-settings.json'] });
    expect(!r.ok && r.problems).toEqual([
      { path: 'parameters.uri', message: expect.stringMatching(/upload the model file/) },
    ]);
  });

  test('content_type must be np, pd or str', () => {
    const s = npSettings();
    (s.parameters as Record<string, unknown>).content_type = 'numpy';
    expectProblem(s, 'parameters.content_type', /"numpy" is not supported; use "np"/);
    delete (s.parameters as Record<string, unknown>).content_type;
    expectProblem(s, 'parameters.content_type', /is missing/);
  });

  test('task_type, when present, is one of the three', () => {
    const s = npSettings();
    s.parameters.task_type = 'ranking';
    expectProblem(s, 'parameters.task_type', /regression, classification, clustering/);
  });

  test('np: exactly one numeric [-1, N] input', () => {
    const two = {
      ...npSettings(),
      inputs: [...npSettings().inputs, { name: 'b', datatype: 'FP32', shape: [-1, 2] }],
    };
    expectProblem(two, 'inputs', /exactly one input .* found 2/);
    expectProblem(
      { ...npSettings(), inputs: [{ name: 'f', datatype: 'BYTES', shape: [-1, 4] }] },
      'inputs[0].datatype',
      /numeric datatype/,
    );
    expectProblem(
      { ...npSettings(), inputs: [{ name: 'f', datatype: 'FP32', shape: [-1] }] },
      'inputs[0].shape',
      /\[-1, N\]/,
    );
    expectProblem(
      { ...npSettings(), inputs: [{ name: 'f', datatype: 'FP32', shape: [4, -1] }] },
      'inputs[0].shape',
      /\[-1, N\]/,
    );
    expectProblem(
      { ...npSettings(), inputs: [{ name: 'f', datatype: 'FP32', shape: [-1, 2, 2] }] },
      'inputs[0].shape',
      /\[-1, N\]/,
    );
  });

  test('pd: feature_names required, one BYTES [-1] input per column, names matching', () => {
    const base = {
      ...npSettings(),
      parameters: { uri: './model.joblib', content_type: 'pd', feature_names: ['city', 'size'] },
      inputs: [{ name: 'city', datatype: 'BYTES', shape: [-1] }],
    };
    expectProblem(base, 'inputs', /no input for the column\(s\) "size"/);
    expectProblem(
      { ...base, parameters: { uri: './model.joblib', content_type: 'pd' } },
      'parameters.feature_names',
      /needs "feature_names".*"city"/,
    );
    expectProblem(
      { ...base, inputs: [...base.inputs, { name: 'colour', datatype: 'BYTES', shape: [-1] }] },
      'inputs[1].name',
      /"colour" is not in parameters.feature_names/,
    );
    expectProblem(
      { ...base, inputs: [{ name: 'city', datatype: 'FP32', shape: [-1] }] },
      'inputs[0].datatype',
      /"BYTES"/,
    );
    expectProblem(
      { ...base, inputs: [{ name: 'city', datatype: 'BYTES', shape: [-1, 1] }] },
      'inputs[0].shape',
      /shape \[-1\]/,
    );
    expectProblem(
      { ...base, parameters: { ...base.parameters, feature_names: ['a', 'a'] } },
      'parameters.feature_names',
      /"a" appears twice/,
    );
    expectProblem(
      { ...base, parameters: { ...base.parameters, feature_names: [] } },
      'parameters.feature_names',
      /non-empty array/,
    );
  });

  test('str: one BYTES [-1] input', () => {
    const base = { ...npSettings(), parameters: { uri: './model.joblib', content_type: 'str' } };
    expectProblem(
      { ...base, inputs: [{ name: 't', datatype: 'FP32', shape: [-1] }] },
      'inputs[0].datatype',
      /"str" needs "BYTES"/,
    );
    expectProblem(
      { ...base, inputs: [{ name: 't', datatype: 'BYTES', shape: [-1, 1] }] },
      'inputs[0].shape',
      /shape \[-1\]/,
    );
    expectProblem(
      {
        ...base,
        inputs: [
          { name: 'a', datatype: 'BYTES', shape: [-1] },
          { name: 'b', datatype: 'BYTES', shape: [-1] },
        ],
      },
      'inputs',
      /exactly one input/,
    );
  });

  test('datatypes are the V2 list', () => {
    expectProblem(
      { ...npSettings(), inputs: [{ name: 'f', datatype: 'FLOAT', shape: [-1, 4] }] },
      'inputs[0].datatype',
      /FP32, FP64, INT32, INT64, BOOL, BYTES/,
    );
    expectProblem(
      { ...npSettings(), outputs: [{ name: 'o', datatype: 'fp32', shape: [-1, 1] }] },
      'outputs[0].datatype',
      /not a V2 datatype/,
    );
  });

  test('shapes: integers, -1 only as the batch dimension', () => {
    expectProblem(
      { ...npSettings(), inputs: [{ name: 'f', datatype: 'FP32', shape: [-1, 0] }] },
      'inputs[0].shape',
      /positive integers/,
    );
    expectProblem(
      { ...npSettings(), inputs: [{ name: 'f', datatype: 'FP32', shape: [-1, 2.5] }] },
      'inputs[0].shape',
      /positive integers/,
    );
    expectProblem(
      { ...npSettings(), inputs: [{ name: 'f', datatype: 'FP32', shape: '[-1, 4]' }] },
      'inputs[0].shape',
      /positive integers/,
    );
    // Without a known content type, the generic batch rule still applies.
    const noCt = { ...npSettings(), parameters: { uri: './model.joblib' } };
    expectProblem(
      { ...noCt, inputs: [{ name: 'f', datatype: 'FP32', shape: [4] }] },
      'inputs[0].shape',
      /first dimension is the batch; make it -1/,
    );
    expectProblem(
      { ...noCt, inputs: [{ name: 'f', datatype: 'FP32', shape: [-1, -1] }] },
      'inputs[0].shape',
      /only the first \(batch\) dimension may be -1/,
    );
  });

  test('output shapes are [-1, 1] or [-1, K]', () => {
    for (const shape of [[-1], [1, 1], [-1, 2, 2], [3]]) {
      expectProblem(
        { ...npSettings(), outputs: [{ name: 'o', datatype: 'FP32', shape }] },
        'outputs[0].shape',
        /\[-1, 1\] .* \[-1, K\]/,
      );
    }
    expect(
      problemsOf({ ...npSettings(), outputs: [{ name: 'o', datatype: 'FP32', shape: [-1, 7] }] }),
    ).toEqual([]);
  });

  test('inputs are required; outputs optional; names unique', () => {
    expectProblem({ ...npSettings(), inputs: [] }, 'inputs', /at least one item/);
    expectProblem({ ...npSettings(), inputs: undefined }, 'inputs', /add "inputs"/);
    expect(problemsOf({ ...npSettings(), outputs: undefined })).toEqual([]);
    expectProblem(
      {
        ...npSettings(),
        outputs: [
          { name: 'o', datatype: 'FP32', shape: [-1, 1] },
          { name: 'o', datatype: 'FP32', shape: [-1, 1] },
        ],
      },
      'outputs[1].name',
      /used twice/,
    );
    expectProblem({ ...npSettings(), inputs: [null] }, 'inputs[0]', /must be an object/);
  });

  test('every problem is reported at once', () => {
    const problems = problemsOf({
      name: 'model-x',
      parameters: { uri: './nope.joblib', content_type: 'xx' },
      inputs: [{ name: '', datatype: 'F', shape: [] }],
    });
    expect(problems.map((p) => p.path)).toEqual([
      'name',
      'implementation',
      'parameters.uri',
      'parameters.content_type',
      'inputs[0].name',
      'inputs[0].datatype',
      'inputs[0].shape',
    ]);
  });
});

describe('a settings file its author made hostile', () => {
  const text = (extra: string) => JSON.stringify(npSettings()).replace(/}$/, `,"x":${extra}}`);

  test('one that parses to more values than a model needs is refused before it is kept', () => {
    // 1 MiB of empty objects parses to ~20 MiB, kept per version by the operator.
    const r = checkModelSettingsText(text(`[${'{},'.repeat(25_000)}{}]`), { modelName: 'model-iris', files });
    expect(r).toEqual({
      ok: false,
      problems: [{ path: '', message: expect.stringMatching(/^holds more than 20000 values/) }],
    });
    const deep = checkModelSettingsText(text(`${'['.repeat(30_000)}${']'.repeat(30_000)}`), { files });
    expect(deep.ok).toBe(false);
    // Thousands of feature names still fit.
    const names = Array.from({ length: 5_000 }, (_, i) => `f${i}`);
    const wide = checkModelSettingsText(text(JSON.stringify(names)), { modelName: 'model-iris', files });
    expect(wide.ok).toBe(true);
  });

  test('a value nested deep or grown large is quoted short in the problem, never thrown', () => {
    const deepName = { ...npSettings(), name: JSON.parse(`${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`) };
    expect(problemsOf(deepName)).toContainEqual({
      path: 'name',
      message: 'add "name": "model-iris" (the Model\'s name)',
    });
    const longName = { ...npSettings(), name: `model-${'x'.repeat(100_000)}` };
    const [problem] = problemsOf(longName);
    expect(problem?.path).toBe('name');
    expect(problem?.message.length).toBeLessThan(300);
    const deepType = {
      ...npSettings(),
      parameters: {
        ...npSettings().parameters,
        task_type: JSON.parse(`${'['.repeat(5_000)}${']'.repeat(5_000)}`),
      },
    };
    expect(problemsOf(deepType)).toContainEqual({
      path: 'parameters.task_type',
      message: expect.stringMatching(/^\[\[\[\[…\]\]\]\] is not a task type/),
    });
  });
});
