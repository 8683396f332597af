import type { RequestHandler } from 'express';
import { readKeyUsage } from '../../../common/apikey/usage.js';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { toApiKeyView } from '../views.js';
import { keyIdParam, keyNotFound } from './key-id.js';

/** GET /apikeys/{id}: one of the caller's keys. */
export function getKey(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const id = keyIdParam(req.params);
    const key = await deps.store.get(callerOf(res).subject, id);
    if (key === undefined) throw keyNotFound(id);
    const usage = await readKeyUsage(deps.redis, [id]);
    res.json(toApiKeyView(key, usage.get(id)));
  };
}
