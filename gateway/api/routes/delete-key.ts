import type { RequestHandler } from 'express';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { keyIdParam, keyNotFound } from './key-id.js';

/**
 * DELETE /apikeys/{id}. The index entry goes first: once it is gone (and every replica told), the
 * key is refused, whatever happens next. Were the resource removed first and Redis then failed,
 * the key would keep working with nothing left to show for it.
 */
export function deleteKey(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const id = keyIdParam(req.params);
    const owner = callerOf(res).subject;
    const key = await deps.store.get(owner, id);
    if (key === undefined) throw keyNotFound(id);
    await deps.index.delete({ hash: key.spec.hash, id });
    if (!(await deps.store.delete(owner, id))) throw keyNotFound(id);
    deps.log.info({ id, owner }, 'api key deleted');
    deps.audit.record({ action: 'key.deleted', keyId: id, owner, actor: owner, req });
    res.status(204).end();
  };
}
