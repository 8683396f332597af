/**
 * The Model resource (tollgate.dev/v1alpha1). Its shape is generated from crds/models.yaml (see
 * common/resources/generated/models.ts); this module adds the names and defaults both the operator
 * and the gateway use.
 */
export {
  MODEL_API_VERSION,
  MODEL_PLURAL,
  modelSchema,
  modelSpecSchema,
  modelStatusSchema,
  type Model,
  type ModelSpec,
  type ModelStatus,
} from './generated/models.js';
import type { ModelStatus as ModelStatusType } from './generated/models.js';
export { MODEL_NAME_PATTERN, MODEL_NAME_MAX_LENGTH, isModelName } from './model-name.js';

export const MODEL_GROUP = 'tollgate.dev';
export const MODEL_VERSION = 'v1alpha1';
export const MODEL_KIND = 'Model';

export const DEFAULT_SKLEARN_IMAGE = 'seldonio/mlserver:1.7.1-sklearn';
export const DEFAULT_MLFLOW_IMAGE = 'seldonio/mlserver:1.7.1-mlflow';
/** MLServer's HTTP port, also the Service's. */
export const MODEL_HTTP_PORT = 8080;

/**
 * The runtime's environment that Tollgate sets: where MLServer listens (behind a sidecar, on the
 * pod's loopback only), where the pulled folder is, and its own markers. `spec.env` may not set
 * them (the CRD's rule, and common/resources/model-versions.ts for stores without an API server).
 */
export const RUNTIME_ENV_SET_BY_TOLLGATE: readonly string[] = [
  'MLSERVER_HOST',
  'MLSERVER_HTTP_PORT',
  'MLSERVER_GRPC_PORT',
  'MLSERVER_METRICS_PORT',
  'MLSERVER_MODELS_DIR',
  'MLSERVER_LOAD_MODELS_AT_STARTUP',
];
export const isRuntimeEnvSetByTollgate = (name: string): boolean =>
  name.startsWith('TOLLGATE_') || RUNTIME_ENV_SET_BY_TOLLGATE.includes(name);

/** Where a Model's calls are checked (`spec.gateway`): by the central gateway only, or also in its pods. */
export type ModelGateway = 'central' | 'sidecar';
export const MODEL_GATEWAYS: readonly ModelGateway[] = ['central', 'sidecar'];

export type ModelPhase = 'Pending' | 'Loading' | 'Ready' | 'Failed';
export type ModelCondition = NonNullable<ModelStatusType['conditions']>[number];
