import type { RequestHandler } from 'express';
import { addCredits } from '../../../common/apikey/credits.js';
import { TollgateError } from '../../../common/errors.js';
import { redisUnavailable } from '../../../common/redis/unavailable.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import { identityCounterAccount } from '../../../common/resources/identity.js';
import type { ManagementDeps } from '../deps.js';
import { identityCredits, identityFor, identityParam, identityParamsSchema } from '../identity-access.js';
import type { ManagementRoute } from '../route.js';
import { validate } from '../validate.js';
import { creditsStateSchema } from '../views.js';
import { addCreditsBodySchema } from './admin-add-credits.js';

/** POST /admin/identities/{name}/credits: administrators top up the credits all its keys share. */
function adminAddIdentityCredits(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const caller = callerOf(res);
    requireAdmin(caller, deps.admin.groupsClaim);
    const name = identityParam(req.params);
    if (!req.is('application/json'))
      throw new TollgateError(
        'unsupported_media_type',
        'send {"add": <credits>} as JSON with "Content-Type: application/json"',
      );
    const { add } = validate(addCreditsBodySchema, req.body, 'body');
    const identity = await identityFor(deps, caller, name);
    const credits = identity.spec.credits;
    if (credits === undefined)
      throw new TollgateError(
        'invalid_field',
        `identity "${name}" carries no credits; give it some with PUT /api/v1/admin/identities/${name}/limits`,
        { field: 'add' },
      );
    try {
      await addCredits(deps.redis, identityCounterAccount(deps.sealer, name), credits, add);
    } catch (err) {
      throw redisUnavailable(err);
    }
    const state = await identityCredits(deps, identity);
    deps.audit.record({
      action: 'identity.credits_added',
      identity: name,
      owner: identity.spec.owner,
      actor: caller.subject,
      req,
      detail: { added: add, remaining: state?.remaining ?? 0 },
    });
    res
      .status(200)
      .set(AUDIT_HEADER, await deps.audit.settle())
      .json(state);
  };
}

export const adminAddIdentityCreditsRoute: ManagementRoute = {
  method: 'post',
  path: '/admin/identities/{name}/credits',
  operationId: 'adminAddIdentityCredits',
  summary: 'Administrators: top up the credits an identity’s keys share (recorded in the audit trail)',
  pathParams: identityParamsSchema,
  body: { schema: addCreditsBodySchema, required: true },
  ok: { status: 200, description: 'The identity’s credits now', schema: creditsStateSchema },
  errors: [400, 401, 403, 404, 413, 415, 503],
  handler: adminAddIdentityCredits,
};
