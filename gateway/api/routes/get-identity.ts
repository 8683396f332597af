import type { RequestHandler } from 'express';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { identityFor, identityParam, identityParamsSchema, toIdentityView } from '../identity-access.js';
import type { ManagementRoute } from '../route.js';
import { identityViewSchema } from '../views.js';

/** GET /identities/{name}: one identity, with its credits now. */
function getIdentity(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const identity = await identityFor(deps, callerOf(res), identityParam(req.params));
    res.json(await toIdentityView(deps, identity));
  };
}

export const getIdentityRoute: ManagementRoute = {
  method: 'get',
  path: '/identities/{name}',
  operationId: 'getIdentity',
  summary: 'One of your identities, with its credits now',
  pathParams: identityParamsSchema,
  ok: { status: 200, description: 'The identity', schema: identityViewSchema },
  errors: [400, 401, 404, 503],
  handler: getIdentity,
};
