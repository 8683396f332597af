import type { RequestHandler } from 'express';
import { webhookId } from '../../../common/resources/webhook.js';
import { z } from 'zod';
import { TollgateError } from '../../../common/errors.js';
import { apiKeyId } from '../../../common/resources/apikey.js';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { revokeKey } from '../revoke.js';
import { validate } from '../validate.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import { offboardResultSchema } from '../views.js';
import type { ManagementRoute } from '../route.js';

export const offboardBodySchema = z
  .strictObject({
    owner: z
      .string({ error: 'owner must be the subject of the user to offboard, as listed in `owner`' })
      .min(1, 'owner cannot be empty')
      .max(255, 'owner is a token subject of at most 255 characters'),
  })
  .meta({ examples: [{ owner: 'CgVhbGljZRIFbG9jYWw' }] });

/**
 * POST /admin/offboard: locks one user out when they leave: the tokens they hold are refused from
 * now on, and every key whose owner they are is revoked, however it was made. The owner is named
 * explicitly: keys of users the provider no longer knows are never guessed at.
 */
function offboard(deps: ManagementDeps): RequestHandler {
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
    // First the lockout: from here the user's tokens are refused on every replica, so no new key
    // or roll can start; one already under way undoes itself (create-key, roll-key).
    await deps.offboarded.mark(owner);
    // Then their webhook endpoints: a departed user hears nothing more (not even of this).
    const webhooksRemoved: string[] = [];
    for (const w of await deps.webhooks.store.list()) {
      if (w.spec.owner !== owner || !(await deps.webhooks.store.delete(w))) continue;
      webhooksRemoved.push(webhookId(w.metadata.name));
      deps.audit.record({
        action: 'webhook.deleted',
        owner,
        actor: caller.subject,
        req,
        detail: { webhook: webhookId(w.metadata.name), url: w.spec.url, reason: 'user offboarded' },
      });
    }
    deps.webhooks.dispatcher.forgetEndpoints();
    const revoked: string[] = [];
    // Until a pass finds nothing left: a roll that completed while a pass listed is caught by the
    // next one.
    for (let pass = 0; pass < MAX_PASSES; pass++) {
      const keys = (await deps.store.everyKeyOf(owner)).filter((k) => !revoked.includes(apiKeyId(k)));
      if (keys.length === 0) break;
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
            `offboarding stopped after revoking ${revoked.length} keys (${message}); the user's tokens are already refused; retry to revoke the rest`,
            { cause: e },
          );
        }
      }
    }
    const left = (await deps.store.everyKeyOf(owner)).length;
    if (left > 0) {
      throw new TollgateError(
        'key_changed',
        `offboarding revoked ${revoked.length} keys but ${left} were still being made; the user's tokens are refused, retry to revoke the rest`,
      );
    }
    res.set(AUDIT_HEADER, await deps.audit.settle()).json({ owner, revoked, webhooksRemoved });
  };
}

const MAX_PASSES = 5;

export const offboardRoute: ManagementRoute = {
  method: 'post',
  path: '/admin/offboard',
  operationId: 'offboardUser',
  summary: 'Administrators: revoke every key of one user, and remove their webhooks, in one action',
  body: { schema: offboardBodySchema, required: true },
  ok: { status: 200, description: 'The keys revoked', schema: offboardResultSchema },
  errors: [400, 401, 403, 413, 415, 503],
  handler: offboard,
};
