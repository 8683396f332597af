import type { RequestHandler } from 'express';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import type { ManagementRoute } from '../route.js';
import { webhookFor, webhookIdParam, webhookIdParamsSchema, webhookNotFound } from '../webhook-access.js';

/** DELETE /webhooks/{id}: the endpoint hears nothing more; its queued messages fail as "deleted". */
function deleteWebhook(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const id = webhookIdParam(req.params);
    const webhook = await webhookFor(deps, callerOf(res), id);
    if (!(await deps.webhooks.store.delete(webhook))) throw webhookNotFound(id);
    deps.webhooks.dispatcher.forgetEndpoints();
    res.status(204).end();
  };
}

export const deleteWebhookRoute: ManagementRoute = {
  method: 'delete',
  path: '/webhooks/{id}',
  operationId: 'deleteWebhook',
  summary: 'Remove a webhook endpoint',
  pathParams: webhookIdParamsSchema,
  ok: { status: 204, description: 'Removed' },
  errors: [400, 401, 404, 409, 503],
  handler: deleteWebhook,
};
