import type { RequestHandler } from 'express';
import { z } from 'zod';
import { readKeyUsage } from '../../../common/apikey/usage.js';
import { isTollgateError, TollgateError } from '../../../common/errors.js';
import {
  apiKeyId,
  creditsInputSchema,
  namedLimitsInputSchema,
  rateLimitSchema,
  type ApiKey,
} from '../../../common/resources/apikey.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { keyGrantOf } from '../key-grant.js';
import { keyIdParam, keyIdParamsSchema, noKeyOfAnyone } from '../key-id.js';
import type { ManagementRoute } from '../route.js';
import { validate } from '../validate.js';
import { apiKeyViewSchema, toApiKeyView } from '../views.js';

export const setLimitsBodySchema = z
  .strictObject({
    rateLimit: rateLimitSchema.nullable().optional().describe('null removes it; absent leaves it'),
    limits: namedLimitsInputSchema.nullable().optional().describe('null removes them; absent leaves them'),
    credits: creditsInputSchema.nullable().optional().describe('null removes them; absent leaves them'),
  })
  .refine((b) => b.rateLimit !== undefined || b.limits !== undefined || b.credits !== undefined, {
    message: 'send rateLimit, limits, credits or several (null removes one)',
  })
  .meta({ examples: [{ limits: [{ name: 'per-day', requests: 50000, windowSeconds: 86400 }] }] });

/** Attempts at the conditional write before giving up with key_changed. */
const ATTEMPTS = 5;

const described = (key: ApiKey): Record<string, string> => ({
  rateLimit:
    key.spec.rateLimit === undefined
      ? 'none'
      : `${key.spec.rateLimit.requests}/${key.spec.rateLimit.windowSeconds}s`,
  limits:
    (key.spec.limits ?? []).map((l) => `${l.name}=${l.requests}/${l.windowSeconds}s`).join(',') || 'none',
  credits:
    key.spec.credits === undefined
      ? 'none'
      : `${key.spec.credits.amount}${key.spec.credits.refill === undefined ? '' : `/${key.spec.credits.refill}`}`,
});

/**
 * PUT /admin/apikeys/{id}/limits: administrators override anyone's limits (the key's rateLimit, its
 * named limits and its credits). The resource changes first, then its index entry, which every gateway replica
 * drops from its cache at once; the trail records the limits before and after.
 */
function adminSetLimits(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const caller = callerOf(res);
    requireAdmin(caller, deps.admin.groupsClaim);
    const id = keyIdParam(req.params);
    if (!req.is('application/json')) {
      throw new TollgateError(
        'unsupported_media_type',
        'send the limits as JSON with "Content-Type: application/json"',
      );
    }
    const body = validate(setLimitsBodySchema, req.body, 'body');
    let key = await deps.store.find(id);
    if (key === undefined) throw noKeyOfAnyone(id);
    const before = described(key);
    for (let attempt = 1; ; attempt++) {
      const { rateLimit: _rateLimit, limits: _limits, credits: _credits, ...rest } = key.spec;
      const chosen = <T>(asked: T | null | undefined, kept: T | undefined): T | undefined =>
        asked === undefined ? kept : (asked ?? undefined);
      const rateLimit = chosen(body.rateLimit, key.spec.rateLimit);
      const limits = chosen(body.limits, key.spec.limits);
      const credits = chosen(body.credits, key.spec.credits);
      const spec = {
        ...rest,
        ...(rateLimit === undefined ? {} : { rateLimit }),
        ...(limits === undefined ? {} : { limits }),
        ...(credits === undefined ? {} : { credits }),
      };
      try {
        key = await deps.store.update({ ...key, spec });
        break;
      } catch (e) {
        if (!isTollgateError(e) || e.code !== 'key_changed' || attempt >= ATTEMPTS) throw e;
        const again = await deps.store.find(id);
        if (again === undefined) throw noKeyOfAnyone(id);
        key = again;
      }
    }
    await deps.index.put(key.spec.hash, await keyGrantOf(deps, key));
    deps.audit.record({
      action: 'key.limits_changed',
      keyId: apiKeyId(key),
      key: { name: key.spec.name, start: key.spec.start },
      owner: key.spec.owner,
      actor: caller.subject,
      req,
      detail: Object.fromEntries(
        Object.entries(described(key)).flatMap(([k, after]) => [
          [`${k}Before`, before[k] ?? 'none'],
          [k, after],
        ]),
      ),
    });
    const usage = await readKeyUsage(deps.redis, [id]);
    res
      .status(200)
      .set(AUDIT_HEADER, await deps.audit.settle())
      .json(toApiKeyView(key, usage.get(id)));
  };
}

export const adminSetLimitsRoute: ManagementRoute = {
  method: 'put',
  path: '/admin/apikeys/{id}/limits',
  operationId: 'adminSetApiKeyLimits',
  summary:
    'Administrators: override a key’s rate limit, named limits and credits (recorded in the audit trail)',
  pathParams: keyIdParamsSchema,
  body: { schema: setLimitsBodySchema, required: true },
  ok: { status: 200, description: 'The key with its new limits', schema: apiKeyViewSchema },
  errors: [400, 401, 403, 404, 409, 413, 415, 503],
  handler: adminSetLimits,
};
