import type { RequestHandler } from 'express';
import { z } from 'zod';
import { TollgateError } from '../../../common/errors.js';
import { redisUnavailable } from '../../../common/redis/unavailable.js';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import type { ManagementRoute } from '../route.js';
import { validate } from '../validate.js';
import { deliverySchema } from '../views.js';
import { WEBHOOK_ID_PATTERN } from '../../../common/resources/webhook.js';
import { webhookFor } from '../webhook-access.js';

const replayParamsSchema = z.object({
  id: z.string().regex(WEBHOOK_ID_PATTERN, 'a webhook id is 20 lowercase hexadecimal characters'),
  delivery: z
    .string()
    .regex(
      /^msg_[0-9a-f]{24}$/,
      'a delivery id is msg_ and 24 hexadecimal characters, as listed by .../deliveries',
    ),
});

/** POST /webhooks/{id}/deliveries/{delivery}/replay: sends a message again (a failed one, say), now. */
function replayWebhookDelivery(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const { id, delivery } = validate(replayParamsSchema, req.params, 'path');
    const webhook = await webhookFor(deps, callerOf(res), id);
    let replayed;
    try {
      replayed = await deps.webhooks.queue.replay(webhook.metadata.name, delivery);
    } catch (err) {
      throw redisUnavailable(err);
    }
    if (replayed === undefined)
      throw new TollgateError(
        'delivery_not_found',
        `webhook ${id} has no delivery ${delivery} (deliveries are kept a few days); GET /api/v1/webhooks/${id}/deliveries lists them`,
      );
    if (replayed === 'pending')
      throw new TollgateError(
        'delivery_pending',
        `delivery ${delivery} is already queued and sent within a minute; replay it once its attempt is recorded (GET /api/v1/webhooks/${id}/deliveries)`,
      );
    void deps.webhooks.dispatcher.poll();
    res.status(202).json(replayed);
  };
}

export const replayWebhookDeliveryRoute: ManagementRoute = {
  method: 'post',
  path: '/webhooks/{id}/deliveries/{delivery}/replay',
  operationId: 'replayWebhookDelivery',
  summary: 'Send a delivery again now, with its attempts counted afresh',
  pathParams: replayParamsSchema,
  ok: { status: 202, description: 'Queued again', schema: deliverySchema },
  errors: [400, 401, 404, 409, 503],
  handler: replayWebhookDelivery,
};
