import type { RequestHandler } from 'express';
import { z } from 'zod';
import { isTollgateError, TollgateError } from '../../../common/errors.js';
import { creditsInputSchema, namedLimitsInputSchema } from '../../../common/resources/apikey.js';
import type { Identity } from '../../../common/resources/identity.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import {
  identityFor,
  identityParam,
  identityParamsSchema,
  rewriteKeysOf,
  toIdentityView,
} from '../identity-access.js';
import type { ManagementRoute } from '../route.js';
import { validate } from '../validate.js';
import { identityViewSchema } from '../views.js';

export const setIdentityLimitsBodySchema = z
  .strictObject({
    limits: namedLimitsInputSchema.nullable().optional().describe('null removes them; absent leaves them'),
    credits: creditsInputSchema.nullable().optional().describe('null removes them; absent leaves them'),
  })
  .refine((b) => b.limits !== undefined || b.credits !== undefined, {
    message: 'send limits, credits or both (null removes one)',
  })
  .meta({ examples: [{ credits: { amount: 500000, refill: 'monthly' } }] });

/** Attempts at the conditional write before giving up with identity_changed. */
const ATTEMPTS = 5;

const described = (i: Identity): Record<string, string> => ({
  limits: (i.spec.limits ?? []).map((l) => `${l.name}=${l.requests}/${l.windowSeconds}s`).join(',') || 'none',
  credits:
    i.spec.credits === undefined
      ? 'none'
      : `${i.spec.credits.amount}${i.spec.credits.refill === undefined ? '' : `/${i.spec.credits.refill}`}`,
});

/**
 * PUT /admin/identities/{name}/limits: administrators set an identity's limits and credits. The
 * resource changes, then the index entry of each of its keys, which every replica drops at once.
 */
function adminSetIdentityLimits(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const caller = callerOf(res);
    requireAdmin(caller, deps.admin.groupsClaim);
    const name = identityParam(req.params);
    if (!req.is('application/json'))
      throw new TollgateError(
        'unsupported_media_type',
        'send the limits as JSON with "Content-Type: application/json"',
      );
    const body = validate(setIdentityLimitsBodySchema, req.body, 'body');
    let identity = await identityFor(deps, caller, name);
    const before = described(identity);
    for (let attempt = 1; ; attempt++) {
      const { limits: _limits, credits: _credits, ...rest } = identity.spec;
      const limits = body.limits === undefined ? identity.spec.limits : (body.limits ?? undefined);
      const credits = body.credits === undefined ? identity.spec.credits : (body.credits ?? undefined);
      const spec = {
        ...rest,
        ...(limits === undefined ? {} : { limits }),
        ...(credits === undefined ? {} : { credits }),
      };
      try {
        identity = await deps.identities.update({ ...identity, spec });
        break;
      } catch (e) {
        if (!isTollgateError(e) || e.code !== 'identity_changed' || attempt >= ATTEMPTS) throw e;
        identity = await identityFor(deps, caller, name);
      }
    }
    const keys = await rewriteKeysOf(deps, identity);
    const after = described(identity);
    deps.audit.record({
      action: 'identity.limits_changed',
      identity: name,
      owner: identity.spec.owner,
      actor: caller.subject,
      req,
      detail: {
        limitsBefore: before.limits ?? 'none',
        limits: after.limits ?? 'none',
        creditsBefore: before.credits ?? 'none',
        credits: after.credits ?? 'none',
        keys,
      },
    });
    res
      .status(200)
      .set(AUDIT_HEADER, await deps.audit.settle())
      .json(await toIdentityView(deps, identity));
  };
}

export const adminSetIdentityLimitsRoute: ManagementRoute = {
  method: 'put',
  path: '/admin/identities/{name}/limits',
  operationId: 'adminSetIdentityLimits',
  summary:
    'Administrators: set an identity’s limits and credits, which all its keys share (recorded in the audit trail)',
  pathParams: identityParamsSchema,
  body: { schema: setIdentityLimitsBodySchema, required: true },
  ok: { status: 200, description: 'The identity with its new limits', schema: identityViewSchema },
  errors: [400, 401, 403, 404, 409, 413, 415, 503],
  handler: adminSetIdentityLimits,
};
