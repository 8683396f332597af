import { TOLLGATE_VERSION } from '../../../common/version.js';
import type { V2EndpointSpec } from '../endpoint.js';
import { sendJson } from '../http.js';

/** The protocol's server metadata (open, like health): REST's GET /v2 and gRPC's ServerMetadata. */
export const SERVER_METADATA = { name: 'tollgate', version: TOLLGATE_VERSION, extensions: [] as string[] };

/** GET /v2. */
export const serverMetadata: V2EndpointSpec = {
  name: 'server',
  method: 'GET',
  path: [],
  security: 'none',
  grpc: 'ServerMetadata',
  forModel: false,
  rest: async (_ctx, _req, res) => sendJson(res, 200, SERVER_METADATA),
};
