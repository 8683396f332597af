import type { RequestHandler } from 'express';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { revokeKey } from '../revoke.js';
import { keyIdParam, keyNotFound } from './key-id.js';
import { AUDIT_HEADER } from '../../audit/audit-log.js';

/** DELETE /apikeys/{id}: one of the caller's keys, refused on every replica at once. */
export function deleteKey(deps: ManagementDeps): RequestHandler {
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
