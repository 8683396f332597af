import type { Request } from 'express';
import { apiKeyId, type ApiKey } from '../../common/resources/apikey.js';
import type { ManagementDeps } from './deps.js';

/**
 * Revokes one key, by its owner or by an administrator. The index entry goes first: once it is
 * gone (and every replica told), the key is refused, whatever happens next. Were the resource
 * removed first and Redis then failed, the key would keep working with nothing left to show for it.
 * Returns false when the key was deleted meanwhile by someone else.
 */
export async function revokeKey(
  deps: ManagementDeps,
  key: ApiKey,
  by: { actor: string; req: Request; reason?: string },
): Promise<boolean> {
  const id = apiKeyId(key);
  const owner = key.spec.owner;
  await deps.index.delete({ hash: key.spec.hash, id });
  if (!(await deps.store.delete(owner, id))) return false;
  deps.log.info({ id, owner, actor: by.actor, reason: by.reason }, 'api key deleted');
  deps.audit.record({
    action: 'key.deleted',
    keyId: id,
    key: { name: key.spec.name, start: key.spec.start },
    owner,
    actor: by.actor,
    req: by.req,
    ...(by.reason === undefined ? {} : { detail: { reason: by.reason } }),
  });
  return true;
}
