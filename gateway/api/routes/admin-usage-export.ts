import type { RequestHandler } from 'express';
import { z } from 'zod';
import { TollgateError } from '../../../common/errors.js';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import { toCloudEvent, usageEventSchema } from '../../usage-export/cloud-events.js';
import { cursorAt, readRecords, STREAM_ID } from '../../usage-export/records.js';
import type { ManagementDeps } from '../deps.js';
import type { ManagementRoute } from '../route.js';
import { validate } from '../validate.js';

const MAX_LIMIT = 1_000;
const SINCE =
  'since is the `next` of a previous answer (such as 1764851700000-0) or an ISO 8601 date-time with a time zone';

export const usageExportQuerySchema = z.strictObject({
  since: z
    .string()
    .max(64, SINCE)
    .refine((v) => STREAM_ID.test(v) || z.iso.datetime({ offset: true }).safeParse(v).success, SINCE)
    .optional()
    .describe(
      'Where to go on from: the `next` of the last answer, or a time (events closed since then); absent, the oldest kept',
    ),
  limit: z.coerce
    .number({ error: `limit must be a whole number from 1 to ${MAX_LIMIT}` })
    .int(`limit must be a whole number from 1 to ${MAX_LIMIT}`)
    .min(1, `limit must be a whole number from 1 to ${MAX_LIMIT}`)
    .max(MAX_LIMIT, `limit must be a whole number from 1 to ${MAX_LIMIT}`)
    .default(500),
});

export const usageExportPageSchema = z.object({
  events: z.array(usageEventSchema),
  next: z.string().describe('Pass as since to read on; the same as since when nothing was new'),
  more: z.boolean().describe('More events are there now: read again at once'),
});

/**
 * GET /admin/usage/export: every user's usage as CloudEvents, a minute per key, identity and
 * target, oldest first, from a cursor. A reader that keeps the last `next` it stored reads each
 * event at least once; the event ids dedupe a page read twice.
 */
function adminUsageExport(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    requireAdmin(callerOf(res), deps.admin.groupsClaim);
    const query = validate(usageExportQuerySchema, req.query, 'query');
    const settings = deps.usageExport;
    if (settings === undefined)
      throw new TollgateError(
        'usage_export_off',
        'this gateway exports no usage: its usageExport setting is off (set it to true)',
      );
    const since = query.since;
    const after = since === undefined || STREAM_ID.test(since) ? since : cursorAt(Date.parse(since));
    const page = await readRecords(deps.redis, after, query.limit);
    res.json({
      events: page.records.map((r) => toCloudEvent(r, settings.source)),
      next: page.next,
      more: page.more,
    });
  };
}

export const adminUsageExportRoute: ManagementRoute = {
  method: 'get',
  path: '/admin/usage/export',
  operationId: 'adminExportUsage',
  summary: 'Administrators: usage per key, identity, target and minute as CloudEvents, from a cursor',
  query: usageExportQuerySchema,
  ok: { status: 200, description: 'A page of usage events, oldest first', schema: usageExportPageSchema },
  errors: [400, 401, 403, 404, 410, 503],
  handler: adminUsageExport,
};
