import type { RequestHandler } from 'express';
import { TollgateError } from '../../../common/errors.js';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { revokeKey } from '../revoke.js';
import { keyIdParam, keyIdParamsSchema } from '../key-id.js';
import { AUDIT_HEADER } from '../../audit/audit-log.js';
import type { ManagementRoute } from '../route.js';

const noSuchKey = (id: string): TollgateError =>
  new TollgateError(
    'key_not_found',
    `no user has an API key with id ${id}; GET /api/v1/admin/apikeys lists them`,
  );

/** DELETE /admin/apikeys/{id}: revokes anyone's key; the audit trail names the administrator. */
function adminDeleteKey(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const caller = callerOf(res);
    requireAdmin(caller, deps.admin.groupsClaim);
    const id = keyIdParam(req.params);
    const key = await deps.store.find(id);
    if (key === undefined) throw noSuchKey(id);
    if (
      !(await revokeKey(deps, key, { actor: caller.subject, req, reason: 'revoked by an administrator' }))
    ) {
      throw noSuchKey(id);
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
