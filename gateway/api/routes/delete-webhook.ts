import type { RequestHandler } from 'express';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import type { ManagementRoute } from '../route.js';
import { webhookFor, webhookIdParam, webhookIdParamsSchema, webhookNotFound } from '../webhook-access.js';

/** DELETE /webhooks/{id}: the endpoint hears nothing more; its queued messages fail as "deleted". */
function deleteWebhook(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const id = webhookIdParam(req.params);
    const caller = callerOf(res);
    const webhook = await webhookFor(deps, caller, id);
    if (!(await deps.webhooks.store.delete(webhook))) throw webhookNotFound(id);
    deps.webhooks.dispatcher.forgetEndpoints();
    deps.audit.record({
      action: 'webhook.deleted',
      owner: webhook.spec.owner,
      actor: caller.subject,
      req,
      detail: { webhook: id, url: webhook.spec.url },
    });
    res
      .status(204)
      .set(AUDIT_HEADER, await deps.audit.settle())
      .end();
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
