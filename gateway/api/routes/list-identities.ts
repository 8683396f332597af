import type { RequestHandler } from 'express';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { toIdentityView } from '../identity-access.js';
import type { ManagementRoute } from '../route.js';
import { identityListSchema } from '../views.js';

/** GET /identities: the caller's identities (an administrator's: everyone's). */
function listIdentities(deps: ManagementDeps): RequestHandler {
  return async (_req, res) => {
    const caller = callerOf(res);
    const identities = (await deps.identities.list()).filter(
      (i) => caller.admin || i.spec.owner === caller.subject,
    );
    identities.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    // Without key counts: each is a pass over every key.
    res.json({ items: await Promise.all(identities.map((i) => toIdentityView(deps, i, false))) });
  };
}

export const listIdentitiesRoute: ManagementRoute = {
  method: 'get',
  path: '/identities',
  operationId: 'listIdentities',
  summary: 'Your identities (an administrator sees everyone’s), with their credits now',
  ok: { status: 200, description: 'The identities, by name', schema: identityListSchema },
  errors: [401, 503],
  handler: listIdentities,
};
