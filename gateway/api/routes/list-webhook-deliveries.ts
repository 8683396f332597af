import type { RequestHandler } from 'express';
import { z } from 'zod';
import { redisUnavailable } from '../../../common/redis/unavailable.js';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import type { ManagementRoute } from '../route.js';
import { validate } from '../validate.js';
import { deliveryListSchema } from '../views.js';
import { webhookFor, webhookIdParam, webhookIdParamsSchema } from '../webhook-access.js';

export const deliveriesQuerySchema = z.strictObject({
  status: z
    .enum(['pending', 'delivered', 'failed'], { error: 'status is pending, delivered or failed' })
    .optional(),
  limit: z.coerce
    .number({ error: 'limit must be a whole number from 1 to 200' })
    .int('limit must be a whole number from 1 to 200')
    .min(1, 'limit must be a whole number from 1 to 200')
    .max(200, 'limit must be a whole number from 1 to 200')
    .default(50),
});

/** GET /webhooks/{id}/deliveries: its recent messages, newest first, with what each attempt came to. */
function listWebhookDeliveries(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const webhook = await webhookFor(deps, callerOf(res), webhookIdParam(req.params));
    const { status, limit } = validate(deliveriesQuerySchema, req.query, 'query');
    let items;
    try {
      items = await deps.webhooks.queue.list(webhook.metadata.name, 200);
    } catch (err) {
      throw redisUnavailable(err);
    }
    res.json({ items: items.filter((d) => status === undefined || d.status === status).slice(0, limit) });
  };
}

export const listWebhookDeliveriesRoute: ManagementRoute = {
  method: 'get',
  path: '/webhooks/{id}/deliveries',
  operationId: 'listWebhookDeliveries',
  summary:
    'An endpoint’s recent deliveries, newest first: delivered, pending (with the next attempt) or failed',
  pathParams: webhookIdParamsSchema,
  query: deliveriesQuerySchema,
  ok: { status: 200, description: 'The deliveries', schema: deliveryListSchema },
  errors: [400, 401, 404, 503],
  handler: listWebhookDeliveries,
};
