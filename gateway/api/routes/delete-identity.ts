import type { RequestHandler } from 'express';
import { TollgateError } from '../../../common/errors.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { identityFor, identityNotFound, identityParam, identityParamsSchema } from '../identity-access.js';
import type { ManagementRoute } from '../route.js';

/**
 * DELETE /identities/{name}: only an identity no key belongs to. Were its keys left, they would be
 * refused (identity_missing) rather than let off its limits; the owner deletes them first.
 */
function deleteIdentity(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const caller = callerOf(res);
    const name = identityParam(req.params);
    const identity = await identityFor(deps, caller, name);
    const keys = await deps.store.keysOfIdentity(identity.spec.owner, name);
    if (keys.length > 0)
      throw new TollgateError(
        'identity_in_use',
        `identity "${name}" still has ${keys.length} key(s); delete them first (GET /api/v1/apikeys shows each key's identity)`,
      );
    if (!(await deps.identities.delete(identity))) throw identityNotFound(name);
    deps.audit.record({
      action: 'identity.deleted',
      identity: name,
      owner: identity.spec.owner,
      actor: caller.subject,
      req,
    });
    res
      .status(204)
      .set(AUDIT_HEADER, await deps.audit.settle())
      .end();
  };
}

export const deleteIdentityRoute: ManagementRoute = {
  method: 'delete',
  path: '/identities/{name}',
  operationId: 'deleteIdentity',
  summary: 'Delete an identity no key belongs to',
  pathParams: identityParamsSchema,
  ok: { status: 204, description: 'Deleted' },
  errors: [400, 401, 404, 409, 503],
  handler: deleteIdentity,
};
