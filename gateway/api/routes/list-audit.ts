import type { RequestHandler } from 'express';
import { z } from 'zod';
import { KEY_ID_PATTERN } from '../../../common/resources/apikey.js';
import { identityNameSchema } from '../../../common/resources/identity.js';
import { AUDIT_ACTIONS, auditEventSchema } from '../../audit/audit-event.js';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { validate } from '../validate.js';
import type { ManagementRoute } from '../route.js';

const MAX_LIMIT = 500;
const dateTime = (field: string) =>
  z.iso.datetime({
    offset: true,
    error: `${field} must be an ISO 8601 date-time with a time zone, e.g. 2030-01-31T23:59:59Z`,
  });

export const auditQuerySchema = z
  .strictObject({
    keyId: z.string().regex(KEY_ID_PATTERN, 'keyId is 20 lowercase hexadecimal characters').optional(),
    identity: identityNameSchema.optional(),
    action: z.enum(AUDIT_ACTIONS, { error: `action is one of ${AUDIT_ACTIONS.join(', ')}` }).optional(),
    since: dateTime('since').optional(),
    until: dateTime('until').optional(),
    limit: z.coerce
      .number({ error: `limit must be a whole number from 1 to ${MAX_LIMIT}` })
      .int(`limit must be a whole number from 1 to ${MAX_LIMIT}`)
      .min(1, `limit must be a whole number from 1 to ${MAX_LIMIT}`)
      .max(MAX_LIMIT, `limit must be a whole number from 1 to ${MAX_LIMIT}`)
      .default(100),
    cursor: z
      .string()
      .min(1)
      .max(512, 'cursor is not one this API returned; start again without it')
      .optional(),
  })
  .refine(
    (q) => q.since === undefined || q.until === undefined || Date.parse(q.since) <= Date.parse(q.until),
    {
      message: 'since is after until; swap them',
      path: ['since'],
    },
  );

/**
 * GET /audit: the events of the caller's keys (created, rolled, deleted, expired, refused uses) and
 * identities (created, deleted, limits changed, credits added),
 * newest first, including keys since deleted.
 */
function listAudit(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const query = validate(auditQuerySchema, req.query, 'query');
    const page = await deps.audit.query(callerOf(res).subject, query);
    res.json(page);
  };
}

export const auditPageSchema = z.object({
  items: z.array(auditEventSchema),
  nextCursor: z.string().optional(),
});

export const listAuditRoute: ManagementRoute = {
  method: 'get',
  path: '/audit',
  operationId: 'listAuditEvents',
  summary: 'Events of your keys and identities, newest first',
  query: auditQuerySchema,
  ok: { status: 200, description: 'A page of events', schema: auditPageSchema },
  errors: [400, 401, 503],
  handler: listAudit,
};
