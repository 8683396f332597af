import type { RequestHandler } from 'express';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import type { ManagementRoute } from '../route.js';
import { webhookListSchema } from '../views.js';
import { toWebhookView } from '../webhook-access.js';

/** GET /webhooks: the caller's endpoints (an administrator's: everyone's). */
function listWebhooks(deps: ManagementDeps): RequestHandler {
  return async (_req, res) => {
    const caller = callerOf(res);
    const mine = (await deps.webhooks.store.list()).filter(
      (w) => caller.admin || w.spec.owner === caller.subject,
    );
    mine.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    res.json({ items: mine.map(toWebhookView) });
  };
}

export const listWebhooksRoute: ManagementRoute = {
  method: 'get',
  path: '/webhooks',
  operationId: 'listWebhooks',
  summary: 'Your webhook endpoints (an administrator sees everyone’s)',
  ok: { status: 200, description: 'The endpoints', schema: webhookListSchema },
  errors: [401, 503],
  handler: listWebhooks,
};
