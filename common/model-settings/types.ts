/**
 * The model-settings.json vocabulary shared by the operator (which checks a folder before deploying
 * it), the CLI (`tollgate validate`) and the gateway (which checks V2 requests against the declared
 * inputs). Field meanings follow the model inference serving spec.
 */
/** Every tensor datatype of the Open Inference Protocol (V2). */
export const V2_DATATYPES = [
  'BOOL',
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'FP16',
  'FP32',
  'FP64',
  'BYTES',
] as const;
export type V2Datatype = (typeof V2_DATATYPES)[number];

/** The datatypes a model-settings.json may declare: those the spec's input rules cover. */
export const DATATYPES = [
  'FP32',
  'FP64',
  'INT32',
  'INT64',
  'BOOL',
  'BYTES',
] as const satisfies readonly V2Datatype[];
export type Datatype = (typeof DATATYPES)[number];

export const NUMERIC_DATATYPES: readonly Datatype[] = ['FP32', 'FP64', 'INT32', 'INT64'];

export const CONTENT_TYPES = ['np', 'pd', 'str'] as const;
export type ContentType = (typeof CONTENT_TYPES)[number];

export const TASK_TYPES = ['regression', 'classification', 'clustering'] as const;

export const SETTINGS_FILE = 'model-settings.json';
export const MLMODEL_FILE = 'MLmodel';
export const SKLEARN_IMPLEMENTATION = 'mlserver_sklearn.SKLearnModel';
export const MLFLOW_IMPLEMENTATION = 'mlserver_mlflow.MLflowRuntime';

export interface TensorSpec {
  name: string;
  datatype: Datatype;
  /** -1 marks the batch dimension, which is always the first. */
  shape: number[];
}

export interface ModelSettings {
  name: string;
  implementation: string;
  parameters: {
    uri: string;
    content_type?: ContentType;
    task_type?: string;
    feature_names?: string[];
    [extra: string]: unknown;
  };
  inputs?: TensorSpec[];
  outputs?: TensorSpec[];
  [extra: string]: unknown;
}

/** One thing to fix: where (a JSON path inside the file) and what to change. */
export interface SettingsProblem {
  path: string;
  message: string;
}

/** What a checked folder declares: the operator copies it into Model.status. */
export interface DeclaredSchema {
  contentType?: ContentType;
  inputs: TensorSpec[];
  outputs: TensorSpec[];
}
