import { parse as parseYaml } from 'yaml';
import {
  MLFLOW_IMPLEMENTATION,
  type Datatype,
  type DeclaredSchema,
  type ModelSettings,
  type SettingsProblem,
  type TensorSpec,
} from './types.js';

/** MLflow column types and numpy dtypes → V2 datatypes. */
const MLFLOW_TYPES: Record<string, Datatype> = {
  double: 'FP64',
  float: 'FP32',
  long: 'INT64',
  integer: 'INT32',
  boolean: 'BOOL',
  string: 'BYTES',
  binary: 'BYTES',
  float64: 'FP64',
  float32: 'FP32',
  int64: 'INT64',
  int32: 'INT32',
  bool: 'BOOL',
  object: 'BYTES',
  str: 'BYTES',
};

export type MlflowCheck =
  | { ok: true; settings: ModelSettings; declared: DeclaredSchema }
  | { ok: false; problems: SettingsProblem[] };

interface SignatureItem {
  name?: string;
  type?: string;
  'tensor-spec'?: { dtype?: string; shape?: number[] };
}

/**
 * An MLflow model folder carries its own signature in `MLmodel`, so it needs no settings file: the
 * operator writes one for MLServer's MLflow runtime, and reads the signature only to publish the
 * declared inputs and outputs in the Model's status.
 */
export function settingsFromMlmodel(modelName: string, mlmodelText: string): MlflowCheck {
  let doc: unknown;
  try {
    doc = parseYaml(mlmodelText);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return {
      ok: false,
      problems: [{ path: 'MLmodel', message: `not valid YAML (${why}); re-save the model with mlflow` }],
    };
  }
  const flavors = (doc as { flavors?: Record<string, unknown> } | null)?.flavors;
  if (typeof flavors !== 'object' || flavors === null || !('python_function' in flavors)) {
    return {
      ok: false,
      problems: [
        {
          path: 'MLmodel.flavors.python_function',
          message:
            'the MLflow runtime loads models through the python_function flavor; save the model with mlflow.sklearn.log_model or save_model',
        },
      ],
    };
  }
  const signature = (doc as { signature?: { inputs?: unknown; outputs?: unknown } }).signature;
  const settings: ModelSettings = {
    name: modelName,
    implementation: MLFLOW_IMPLEMENTATION,
    parameters: { uri: './' },
  };
  return {
    ok: true,
    settings,
    declared: {
      inputs: signatureTensors(signature?.inputs, 'input'),
      outputs: signatureTensors(signature?.outputs, 'output'),
    },
  };
}

function signatureTensors(value: unknown, fallbackName: string): TensorSpec[] {
  if (typeof value !== 'string') return [];
  let items: unknown;
  try {
    items = JSON.parse(value);
  } catch {
    return [];
  }
  if (!Array.isArray(items)) return [];
  return (items as SignatureItem[]).flatMap((item, i): TensorSpec[] => {
    const name = item.name ?? ((items as unknown[]).length === 1 ? fallbackName : `${fallbackName}-${i}`);
    if (item.type === 'tensor') {
      const datatype = MLFLOW_TYPES[item['tensor-spec']?.dtype ?? ''];
      const shape = item['tensor-spec']?.shape;
      return datatype && Array.isArray(shape) ? [{ name, datatype, shape }] : [];
    }
    // A column is one value per row: MLServer's MLflow runtime publishes it as [-1, 1].
    const datatype = MLFLOW_TYPES[item.type ?? ''];
    return datatype ? [{ name, datatype, shape: [-1, 1] }] : [];
  });
}
