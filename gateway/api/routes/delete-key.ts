import type { RequestHandler } from 'express';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { revokeKey } from '../revoke.js';
import { keyIdParam, keyNotFound, keyIdParamsSchema } from '../key-id.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import type { ManagementRoute } from '../route.js';

/** DELETE /apikeys/{id}: one of the caller's keys, refused on every replica at once. */
function deleteKey(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const id = keyIdParam(req.params);
    const owner = callerOf(res).subject;
    const key = await deps.store.get(owner, id);
    if (key === undefined) throw keyNotFound(id);
    if (!(await revokeKey(deps, key, { actor: owner, req }))) throw keyNotFound(id);
    res
      .status(204)
      .set(AUDIT_HEADER, await deps.audit.settle())
      .end();
  };
}

export const deleteKeyRoute: ManagementRoute = {
  method: 'delete',
  path: '/apikeys/{id}',
  operationId: 'deleteApiKey',
  summary: 'Delete a key: refused on every gateway replica at once',
  pathParams: keyIdParamsSchema,
  ok: { status: 204, description: 'Deleted' },
  errors: [400, 401, 404, 503],
  handler: deleteKey,
};
