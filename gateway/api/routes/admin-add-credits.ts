import type { RequestHandler } from 'express';
import { z } from 'zod';
import { addCredits, readCredits } from '../../../common/apikey/credits.js';
import { TollgateError } from '../../../common/errors.js';
import { redisUnavailable } from '../../../common/redis/unavailable.js';
import { apiKeyId } from '../../../common/resources/apikey.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { keyIdParam, keyIdParamsSchema, noKeyOfAnyone } from '../key-id.js';
import type { ManagementRoute } from '../route.js';
import { validate } from '../validate.js';
import { creditsStateSchema } from '../views.js';

export const addCreditsBodySchema = z.strictObject({
  add: z
    .int({ error: 'add is a whole number of credits' })
    .min(1, 'add is at least 1')
    .max(1_000_000_000_000, 'add is at most 1,000,000,000,000'),
});

/**
 * POST /admin/apikeys/{id}/credits: administrators top up a key's credits for its current period
 * (for a key without refill, for good). Every replica sees the new balance on the key's next call.
 */
function adminAddCredits(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const caller = callerOf(res);
    requireAdmin(caller, deps.admin.groupsClaim);
    const id = keyIdParam(req.params);
    if (!req.is('application/json'))
      throw new TollgateError(
        'unsupported_media_type',
        'send {"add": <credits>} as JSON with "Content-Type: application/json"',
      );
    const { add } = validate(addCreditsBodySchema, req.body, 'body');
    const key = await deps.store.find(id);
    if (key === undefined) throw noKeyOfAnyone(id);
    const credits = key.spec.credits;
    if (credits === undefined) {
      throw new TollgateError(
        'invalid_field',
        `API key ${id} carries no credits; give it some with PUT /api/v1/admin/apikeys/${id}/limits`,
        { field: 'add' },
      );
    }
    let state;
    try {
      const account = key.spec.countsAs ?? id;
      await addCredits(deps.redis, account, credits, add);
      state = await readCredits(deps.redis, account, credits);
    } catch (err) {
      throw redisUnavailable(err);
    }
    deps.audit.record({
      action: 'key.credits_added',
      keyId: apiKeyId(key),
      key: { name: key.spec.name, start: key.spec.start },
      owner: key.spec.owner,
      actor: caller.subject,
      req,
      detail: { added: add, remaining: state.remaining },
    });
    res
      .status(200)
      .set(AUDIT_HEADER, await deps.audit.settle())
      .json(state);
  };
}

export const adminAddCreditsRoute: ManagementRoute = {
  method: 'post',
  path: '/admin/apikeys/{id}/credits',
  operationId: 'adminAddApiKeyCredits',
  summary: 'Administrators: top up a key’s credits for its current period (recorded in the audit trail)',
  pathParams: keyIdParamsSchema,
  body: { schema: addCreditsBodySchema, required: true },
  ok: { status: 200, description: 'The key’s credits now', schema: creditsStateSchema },
  errors: [400, 401, 403, 404, 413, 415, 503],
  handler: adminAddCredits,
};
