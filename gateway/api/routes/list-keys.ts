import type { RequestHandler } from 'express';
import { z } from 'zod';
import { MAX_PAGE_SIZE } from '../../../common/apikey/store.js';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { keyRows } from '../key-rows.js';
import { validate } from '../validate.js';
import { keyPageSchema } from '../views.js';
import type { ManagementRoute } from '../route.js';

export const listKeysQuerySchema = z.strictObject({
  search: z.string().max(200, 'search is at most 200 characters').optional(),
  module: z.enum(['bda', 'platform'], { error: 'module must be "bda" or "platform"' }).optional(),
  limit: z.coerce
    .number({ error: `limit must be a whole number from 1 to ${MAX_PAGE_SIZE}` })
    .int(`limit must be a whole number from 1 to ${MAX_PAGE_SIZE}`)
    .min(1, `limit must be a whole number from 1 to ${MAX_PAGE_SIZE}`)
    .max(MAX_PAGE_SIZE, `limit must be a whole number from 1 to ${MAX_PAGE_SIZE}`)
    .optional(),
  cursor: z
    .string()
    .min(1)
    .max(512, 'cursor is not one this API returned; start again without it')
    .optional(),
});

/** GET /apikeys: one page of the caller's keys, newest first. */
function listKeys(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const query = validate(listKeysQuerySchema, req.query, 'query');
    const page = await deps.store.list(callerOf(res).subject, query);
    const items = await keyRows(deps, page.items, () => ({}));
    res.json(page.nextCursor === undefined ? { items } : { items, nextCursor: page.nextCursor });
  };
}

export const listKeysRoute: ManagementRoute = {
  method: 'get',
  path: '/apikeys',
  operationId: 'listApiKeys',
  summary: 'One page of your keys, newest first',
  query: listKeysQuerySchema,
  ok: { status: 200, description: 'A page of keys', schema: keyPageSchema },
  errors: [400, 401, 503],
  handler: listKeys,
};
