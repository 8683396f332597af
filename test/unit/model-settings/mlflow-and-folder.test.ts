import {
  checkModelFolder,
  formatProblems,
  type ModelFolder,
} from '../../../common/model-settings/check-folder.js';

const MLMODEL = `artifact_path: model
flavors:
  python_function:
    env:
      virtualenv: python_env.yaml
    loader_module: mlflow.sklearn
    model_path: model.pkl
    python_version: 3.11.9
  sklearn:
    pickled_model: model.pkl
    sklearn_version: 1.6.1
signature:
  inputs: '[{"type": "double", "name": "sepal length (cm)", "required": true}, {"type": "string", "name": "city", "required": true}]'
  outputs: '[{"type": "tensor", "tensor-spec": {"dtype": "int64", "shape": [-1]}}]'
`;

const folder = (files: Record<string, string>): ModelFolder => ({
  files: Object.keys(files),
  read: async (p) => {
    const text = files[p];
    if (text === undefined) throw new Error(`no ${p}`);
    return text;
  },
});

describe('model folder check', () => {
  test('an MLflow folder without settings gets settings for the MLflow runtime and its signature', async () => {
    const r = await checkModelFolder(folder({ MLmodel: MLMODEL, 'model.pkl': 'x' }), 'model-flow');
    expect(r).toEqual({
      ok: true,
      generated: true,
      settings: {
        name: 'model-flow',
        implementation: 'mlserver_mlflow.MLflowRuntime',
        parameters: { uri: './' },
      },
      declared: {
        inputs: [
          { name: 'sepal length (cm)', datatype: 'FP64', shape: [-1, 1] },
          { name: 'city', datatype: 'BYTES', shape: [-1, 1] },
        ],
        outputs: [{ name: 'output', datatype: 'INT64', shape: [-1] }],
      },
    });
  });

  test('an MLmodel without the python_function flavor is refused with the fix', async () => {
    const r = await checkModelFolder(folder({ MLmodel: 'flavors:\n  sklearn: {}\n' }), 'model-flow');
    expect(!r.ok && formatProblems(r.problems)).toMatch(
      /MLmodel.flavors.python_function: .*mlflow.sklearn.log_model/,
    );
  });

  test('settings beat MLmodel, and their problems are prefixed with the file name', async () => {
    const r = await checkModelFolder(
      folder({ 'model-settings.json': '{"name":"model-b"}', MLmodel: MLMODEL }),
      'model-a',
    );
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problems[0]).toEqual({
      path: 'model-settings.json:name',
      message: expect.stringMatching(/set "name": "model-a"/),
    });
  });

  test('a folder with neither says what to upload', async () => {
    const r = await checkModelFolder(folder({ 'model.joblib': 'x' }), 'model-a');
    expect(!r.ok && formatProblems(r.problems)).toMatch(
      /no model-settings.json .*found model.joblib\); upload model-settings.json/,
    );
    const empty = await checkModelFolder(folder({}), 'model-a');
    expect(!empty.ok && formatProblems(empty.problems)).toMatch(/the folder is empty/);
  });
});
