import type { RequestHandler } from 'express';
import { callerOf } from '../../auth/oidc.js';
import { webhookSecret } from '../../webhooks/signature.js';
import type { ManagementDeps } from '../deps.js';
import type { ManagementRoute } from '../route.js';
import { webhookWithSecretSchema } from '../views.js';
import { toWebhookView, webhookFor, webhookIdParam, webhookIdParamsSchema } from '../webhook-access.js';

/** POST /webhooks/{id}/rotate-secret: a new signing secret from the next delivery on; the old one stops. */
function rotateWebhookSecret(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const webhook = await webhookFor(deps, callerOf(res), webhookIdParam(req.params));
    const rotated = await deps.webhooks.store.update({
      ...webhook,
      spec: { ...webhook.spec, secretVersion: webhook.spec.secretVersion + 1 },
    });
    deps.webhooks.dispatcher.forgetEndpoints();
    res
      .status(200)
      .set('Cache-Control', 'no-store')
      .json({ ...toWebhookView(rotated), secret: webhookSecret(deps.sealer, rotated) });
  };
}

export const rotateWebhookSecretRoute: ManagementRoute = {
  method: 'post',
  path: '/webhooks/{id}/rotate-secret',
  operationId: 'rotateWebhookSecret',
  summary: 'Give an endpoint a new signing secret (shown in this answer only); the old one stops at once',
  pathParams: webhookIdParamsSchema,
  ok: { status: 200, description: 'The endpoint and its new secret', schema: webhookWithSecretSchema },
  errors: [400, 401, 404, 409, 503],
  handler: rotateWebhookSecret,
};
