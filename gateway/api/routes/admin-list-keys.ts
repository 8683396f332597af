import type { RequestHandler } from 'express';
import { z } from 'zod';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { keyRows } from '../key-rows.js';
import { validate } from '../validate.js';
import { listKeysQuerySchema } from './list-keys.js';
import { ownedKeyPageSchema } from '../views.js';
import type { ManagementRoute } from '../route.js';

export const adminListKeysQuerySchema = listKeysQuerySchema.extend({
  owner: z
    .string()
    .min(1, 'owner cannot be empty; leave it out for every user')
    .max(255, 'owner is a token subject of at most 255 characters')
    .optional()
    .describe('Only this user’s keys (the subject shown as `owner`)'),
});

/** GET /admin/apikeys: every user's keys (or one user's), searchable by owner too. */
function adminListKeys(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    requireAdmin(callerOf(res), deps.admin.groupsClaim);
    const query = validate(adminListKeysQuerySchema, req.query, 'query');
    const page = await deps.store.listEvery(query);
    const items = await keyRows(deps, page.items, ({ spec: { owner, ownerName } }) => ({
      owner,
      ...(ownerName === undefined ? {} : { ownerName }),
    }));
    res.json(page.nextCursor === undefined ? { items } : { items, nextCursor: page.nextCursor });
  };
}

export const adminListKeysRoute: ManagementRoute = {
  method: 'get',
  path: '/admin/apikeys',
  operationId: 'adminListApiKeys',
  summary: 'Administrators: one page of every user’s keys (or one user’s), with their owner',
  query: adminListKeysQuerySchema,
  ok: { status: 200, description: 'A page of keys', schema: ownedKeyPageSchema },
  errors: [400, 401, 403, 503],
  handler: adminListKeys,
};
