import { z } from 'zod';
import { TollgateError } from '../../common/errors.js';
import { WEBHOOK_ID_PATTERN, webhookId, webhookName, type Webhook } from '../../common/resources/webhook.js';
import type { Caller } from '../auth/oidc.js';
import type { ManagementDeps } from './deps.js';
import { validate } from './validate.js';
import type { WebhookView } from './views.js';

export const webhookIdParamsSchema = z.object({
  id: z
    .string()
    .regex(
      WEBHOOK_ID_PATTERN,
      'a webhook id is 20 lowercase hexadecimal characters, as listed by GET /webhooks',
    ),
});

/** The `{id}` of `/webhooks/{id}`, checked. */
export const webhookIdParam = (params: unknown): string => validate(webhookIdParamsSchema, params, 'path').id;

/** Another user's endpoint is reported like one that does not exist, so ids do not leak. */
export const webhookNotFound = (id: string): TollgateError =>
  new TollgateError(
    'webhook_not_found',
    `you have no webhook with id ${id}; GET /api/v1/webhooks lists yours`,
  );

/** The endpoint if the caller registered it, or is an administrator. */
export async function webhookFor(deps: ManagementDeps, caller: Caller, id: string): Promise<Webhook> {
  const webhook = await deps.webhooks.store.get(webhookName(id));
  if (webhook === undefined || (webhook.spec.owner !== caller.subject && !caller.admin))
    throw webhookNotFound(id);
  return webhook;
}

export function toWebhookView(w: Webhook): WebhookView {
  const { url, events, owner, allOwners, expiringDays, description } = w.spec;
  const view: WebhookView = { id: webhookId(w.metadata.name), url, events: [...events], owner };
  if (allOwners === true) view.allOwners = true;
  if (expiringDays !== undefined) view.expiringDays = expiringDays;
  if (description !== undefined) view.description = description;
  const created = w.metadata.creationTimestamp;
  if (created !== undefined) view.createdAt = typeof created === 'string' ? created : created.toISOString();
  return view;
}
