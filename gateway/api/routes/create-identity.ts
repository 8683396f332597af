import type { RequestHandler } from 'express';
import { z } from 'zod';
import { TollgateError } from '../../../common/errors.js';
import { takeIdentityCounters } from '../../../common/apikey/credits.js';
import { redisUnavailable } from '../../../common/redis/unavailable.js';
import { creditsInputSchema, namedLimitsInputSchema } from '../../../common/resources/apikey.js';
import {
  IDENTITY_API_VERSION,
  IDENTITY_KIND,
  identityCounterAccount,
  identityNameSchema,
  type Identity,
} from '../../../common/resources/identity.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { toIdentityView } from '../identity-access.js';
import type { ManagementRoute } from '../route.js';
import { validate } from '../validate.js';
import { identityViewSchema } from '../views.js';

/** Identities one user may have (each is a resource on the API server). */
export const MAX_IDENTITIES_PER_OWNER = 100;

// Printable text only: a display name is shown in the panel and in `kubectl get`.
const PRINTABLE = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u;

export const createIdentityBodySchema = z
  .strictObject({
    name: identityNameSchema,
    displayName: z
      .string({ error: 'displayName must be a string' })
      .trim()
      .min(1, 'displayName cannot be blank; leave it out for none')
      .max(100, 'displayName is at most 100 characters')
      .regex(PRINTABLE, 'displayName cannot hold control characters')
      .optional(),
    limits: namedLimitsInputSchema.optional(),
    credits: creditsInputSchema.optional(),
  })
  .meta({
    examples: [
      {
        name: 'acme-corp',
        displayName: 'ACME Corp.',
        limits: [{ name: 'per-day', requests: 100000, windowSeconds: 86400 }],
        credits: { amount: 1000000, refill: 'monthly' },
      },
    ],
  });

/**
 * POST /identities: makes an identity (a customer, a team, a service account) whose keys share
 * its limits and credits. Its maker owns it: only they add keys to it; only administrators change
 * its limits afterwards.
 */
function createIdentity(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    if (!req.is('application/json'))
      throw new TollgateError(
        'unsupported_media_type',
        'send the identity as JSON with "Content-Type: application/json"',
      );
    const body = validate(createIdentityBodySchema, req.body, 'body');
    const caller = callerOf(res);
    const identity: Identity = {
      apiVersion: IDENTITY_API_VERSION,
      kind: IDENTITY_KIND,
      metadata: { name: body.name },
      spec: {
        owner: caller.subject,
        ...(caller.name === undefined ? {} : { ownerName: caller.name }),
        ...(body.displayName === undefined ? {} : { displayName: body.displayName }),
        ...(body.limits === undefined ? {} : { limits: body.limits }),
        ...(body.credits === undefined ? {} : { credits: body.credits }),
      },
    };
    const theirs = (await deps.identities.list()).filter((i) => i.spec.owner === caller.subject);
    if (theirs.length >= MAX_IDENTITIES_PER_OWNER)
      throw new TollgateError(
        'too_many_identities',
        `you have ${theirs.length} identities, the most one user may have; delete one you no longer use first`,
      );
    const created = await deps.identities.create(identity);
    try {
      await takeIdentityCounters(
        deps.redis,
        identityCounterAccount(deps.sealer, body.name),
        caller.subject,
        body.limits,
      );
    } catch (err) {
      // Kept, it could start with what another's identity of its name spent: undone instead.
      await deps.identities
        .delete(created)
        .catch((undo: unknown) =>
          deps.log.error(
            { err: undo, identity: body.name },
            'could not undo an identity whose counters were not cleared',
          ),
        );
      throw redisUnavailable(err);
    }
    deps.audit.record({
      action: 'identity.created',
      identity: body.name,
      owner: caller.subject,
      actor: caller.subject,
      req,
    });
    res
      .status(201)
      .set({ Location: `${req.baseUrl}/identities/${body.name}`, [AUDIT_HEADER]: await deps.audit.settle() })
      .json(await toIdentityView(deps, created));
  };
}

export const createIdentityRoute: ManagementRoute = {
  method: 'post',
  path: '/identities',
  operationId: 'createIdentity',
  summary: 'Make an identity (a customer, a team) whose keys share its limits and credits',
  body: { schema: createIdentityBodySchema, required: true },
  ok: { status: 201, description: 'The new identity', schema: identityViewSchema },
  errors: [400, 401, 409, 413, 415, 503],
  handler: createIdentity,
};
