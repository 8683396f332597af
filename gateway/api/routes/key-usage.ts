import type { RequestHandler } from 'express';
import { readKeyUsage, readUsageSeries } from '../../../common/apikey/usage.js';
import { readCredits } from '../../../common/apikey/credits.js';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { toApiKeyView, keyUsageSchema } from '../views.js';
import { keyIdParam, keyNotFound, keyIdParamsSchema } from '../key-id.js';
import type { ManagementRoute } from '../route.js';
import { identityCredits } from '../identity-access.js';
import { readLimitUsage } from '../../../common/apikey/limit-usage.js';
import { identityCounterAccount } from '../../../common/resources/identity.js';
import { redisUnavailable } from '../../../common/redis/unavailable.js';

/**
 * GET /apikeys/{id}/usage: requests and refusals per minute for the last 24 hours and per hour for
 * the last 30 days, the totals, the last use and the busiest endpoints.
 */
function keyUsage(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const id = keyIdParam(req.params);
    const key = await deps.store.get(callerOf(res).subject, id);
    if (key === undefined) throw keyNotFound(id);
    const [totals, series] = await Promise.all([
      readKeyUsage(deps.redis, [id]),
      readUsageSeries(deps.redis, id),
    ]);
    const view = toApiKeyView(key, totals.get(id));
    const credits =
      key.spec.credits === undefined
        ? undefined
        : await readCredits(deps.redis, key.spec.countsAs ?? id, key.spec.credits);
    // Names are cluster-wide: a key left naming a deleted identity must not show the credits of
    // another owner's identity made later under that name.
    const named = key.spec.identity === undefined ? undefined : await deps.identities.get(key.spec.identity);
    const identity = named?.spec.owner === key.spec.owner ? named : undefined;
    const identityCreditsNow = identity === undefined ? undefined : await identityCredits(deps, identity);
    const account = key.spec.countsAs ?? id;
    const [limits, identityLimits] = await Promise.all([
      readLimitUsage(deps.redis, account, key.spec),
      identity === undefined
        ? []
        : readLimitUsage(
            deps.redis,
            identityCounterAccount(deps.sealer, identity.metadata.name),
            identity.spec,
          ),
    ]).catch((err: unknown) => {
      throw redisUnavailable(err);
    });
    res.json({
      id,
      requestCount: view.requestCount,
      refusalCount: totals.get(id)?.refused ?? 0,
      rowCount: totals.get(id)?.rows ?? 0,
      ...(view.lastUsed === undefined ? {} : { lastUsed: view.lastUsed }),
      ...series,
      ...(credits === undefined ? {} : { credits }),
      ...(identityCreditsNow === undefined ? {} : { identityCredits: identityCreditsNow }),
      ...(limits.length === 0 ? {} : { limits }),
      ...(identityLimits.length === 0 ? {} : { identityLimits }),
    });
  };
}

export const keyUsageRoute: ManagementRoute = {
  method: 'get',
  path: '/apikeys/{id}/usage',
  operationId: 'getApiKeyUsage',
  summary: 'Requests and refusals per minute (24 h) and per hour (30 days), top endpoints',
  pathParams: keyIdParamsSchema,
  ok: { status: 200, description: 'The key’s usage', schema: keyUsageSchema },
  errors: [400, 401, 404, 503],
  handler: keyUsage,
};
