import type { GatewayServices } from '../services.js';
import { centralPlacement, ModelAccess, type V2Placement } from './access.js';
import type { V2Context } from './endpoint.js';
import type { ModelDirectory } from './model-directory.js';
import { RuntimeClient } from './runtime-client.js';

/**
 * The V2 core of one placement, built once and given to both of its entries (REST's router and the
 * gRPC service): one access check, one inference service (and so one shadow budget) per process.
 */
export function createV2Core(
  s: GatewayServices,
  models: ModelDirectory,
  placement: V2Placement = centralPlacement(s),
): V2Context {
  return {
    s,
    access: new ModelAccess(s, models, placement),
    inference: s.inference,
    runtimes: new RuntimeClient(s),
  };
}
