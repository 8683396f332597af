import type { RequestHandler } from 'express';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { revokeKey } from '../revoke.js';
import { keyIdParam, keyIdParamsSchema, noKeyOfAnyone } from '../key-id.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import type { ManagementRoute } from '../route.js';

/** DELETE /admin/apikeys/{id}: revokes anyone's key; the audit trail names the administrator. */
function adminDeleteKey(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const caller = callerOf(res);
    requireAdmin(caller, deps.admin.groupsClaim);
    const id = keyIdParam(req.params);
    const key = await deps.store.find(id);
    if (key === undefined) throw noKeyOfAnyone(id);
    if (
      !(await revokeKey(deps, key, { actor: caller.subject, req, reason: 'revoked by an administrator' }))
    ) {
      throw noKeyOfAnyone(id);
    }
    res
      .status(204)
      .set(AUDIT_HEADER, await deps.audit.settle())
      .end();
  };
}

export const adminDeleteKeyRoute: ManagementRoute = {
  method: 'delete',
  path: '/admin/apikeys/{id}',
  operationId: 'adminDeleteApiKey',
  summary: 'Administrators: revoke anyone’s key (recorded in the audit trail)',
  pathParams: keyIdParamsSchema,
  ok: { status: 204, description: 'Revoked' },
  errors: [400, 401, 403, 404, 503],
  handler: adminDeleteKey,
};
