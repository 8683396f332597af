import { TOLLGATE_VERSION } from '../../../common/version.js';
import type { V2Endpoint } from '../endpoint.js';
import { expectMethod, sendJson } from '../http.js';

/** The protocol's server metadata (open, like health): REST's GET /v2 and gRPC's ServerMetadata. */
export const SERVER_METADATA = { name: 'tollgate', version: TOLLGATE_VERSION, extensions: [] as string[] };

export const serverMetadata: V2Endpoint = async (_ctx, req, res) => {
  expectMethod(req, 'GET');
  sendJson(res, 200, SERVER_METADATA);
};
