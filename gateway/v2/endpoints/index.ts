import type { V2EndpointSpec } from '../endpoint.js';
import { healthLive, healthReady } from './health.js';
import { modelInfer } from './model-infer.js';
import { modelMetadata } from './model-metadata.js';
import { modelReady } from './model-ready.js';
import { listModels } from './models.js';
import { repositoryIndex } from './repository-index.js';
import { serverMetadata } from './server-metadata.js';

/**
 * Every V2 endpoint, as each declares itself: the REST router (paths.ts), the events router (a
 * model under its workflow), the gRPC service and the OpenAPI document loop over this list.
 */
export const V2_ENDPOINTS: readonly V2EndpointSpec[] = [
  serverMetadata,
  healthLive,
  healthReady,
  listModels,
  repositoryIndex,
  modelMetadata,
  modelReady,
  modelInfer,
];
