import type { RequestHandler } from 'express';
import { readKeyUsage } from '../../../common/apikey/usage.js';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { toApiKeyView, apiKeyViewSchema } from '../views.js';
import { keyIdParam, keyNotFound, keyIdParamsSchema } from '../key-id.js';
import type { ManagementRoute } from '../route.js';

/** GET /apikeys/{id}: one of the caller's keys. */
function getKey(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const id = keyIdParam(req.params);
    const key = await deps.store.get(callerOf(res).subject, id);
    if (key === undefined) throw keyNotFound(id);
    const usage = await readKeyUsage(deps.redis, [id]);
    res.json(toApiKeyView(key, usage.get(id)));
  };
}

export const getKeyRoute: ManagementRoute = {
  method: 'get',
  path: '/apikeys/{id}',
  operationId: 'getApiKey',
  summary: 'One of your keys',
  pathParams: keyIdParamsSchema,
  ok: { status: 200, description: 'The key', schema: apiKeyViewSchema },
  errors: [400, 401, 404, 503],
  handler: getKey,
};
