import type { RequestHandler } from 'express';
import { z } from 'zod';
import { MAX_PAGE_SIZE } from '../../../common/apikey/store.js';
import { TollgateError } from '../../../common/errors.js';
import { apiKeyId, type ApiKey } from '../../../common/resources/apikey.js';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { revokeKey } from '../revoke.js';
import { validate } from '../validate.js';

export const offboardBodySchema = z
  .strictObject({
    owner: z
      .string({ error: 'owner must be the subject of the user to offboard, as listed in `owner`' })
      .min(1, 'owner cannot be empty')
      .max(255, 'owner is a token subject of at most 255 characters'),
  })
  .meta({ examples: [{ owner: 'CgVhbGljZRIFbG9jYWw' }] });

/**
 * POST /admin/offboard: revokes every key of one user at once, when they leave. The owner is
 * named explicitly: keys of users the provider no longer knows are never guessed at.
 */
export function offboard(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const caller = callerOf(res);
    requireAdmin(caller, deps.admin.groupsClaim);
    if (!req.is('application/json')) {
      throw new TollgateError(
        'unsupported_media_type',
        'send {"owner": "<subject>"} as JSON with "Content-Type: application/json"',
      );
    }
    const { owner } = validate(offboardBodySchema, req.body, 'body');
    const keys = await allKeysOf(deps, owner);
    const revoked: string[] = [];
    // One at a time: each revocation is complete (index, resource, audit) before the next, so a
    // failure part-way leaves the rest listed for a retry, and says how far it got.
    for (const key of keys) {
      try {
        if (await revokeKey(deps, key, { actor: caller.subject, req, reason: 'user offboarded' })) {
          revoked.push(apiKeyId(key));
        }
      } catch (e) {
        const message = e instanceof TollgateError ? e.message : 'unexpected failure';
        throw new TollgateError(
          e instanceof TollgateError ? e.code : 'internal_error',
          `offboarding stopped after revoking ${revoked.length} of ${keys.length} keys (${message}); retry to revoke the rest`,
          { cause: e },
        );
      }
    }
    res.json({ owner, revoked });
  };
}

async function allKeysOf(deps: ManagementDeps, owner: string): Promise<ApiKey[]> {
  const keys: ApiKey[] = [];
  let cursor: string | undefined;
  do {
    const page = await deps.store.listEvery({
      owner,
      limit: MAX_PAGE_SIZE,
      ...(cursor === undefined ? {} : { cursor }),
    });
    keys.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return keys;
}
