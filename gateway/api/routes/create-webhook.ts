import type { RequestHandler } from 'express';
import { z } from 'zod';
import { TollgateError } from '../../../common/errors.js';
import {
  WEBHOOK_API_VERSION,
  WEBHOOK_EVENTS,
  WEBHOOK_KIND,
  newWebhookId,
  webhookName,
  type Webhook,
} from '../../../common/resources/webhook.js';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import { webhookSecret } from '../../webhooks/signature.js';
import type { ManagementDeps } from '../deps.js';
import type { ManagementRoute } from '../route.js';
import { validate } from '../validate.js';
import { webhookWithSecretSchema } from '../views.js';
import { toWebhookView } from '../webhook-access.js';

/** Endpoints one user may have: each event is a message per endpoint, kept for days. */
export const MAX_WEBHOOKS_PER_OWNER = 10;

// Printable text only: a description is shown in listings.
const PRINTABLE = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u;

export const createWebhookBodySchema = z
  .strictObject({
    url: z
      .url({
        protocol: /^https?$/,
        error: 'url must be an absolute http(s) URL, e.g. https://hooks.example.com/tollgate',
      })
      .max(2048, 'url is at most 2048 characters'),
    events: z
      .array(z.enum(WEBHOOK_EVENTS, { error: `each event is one of ${WEBHOOK_EVENTS.join(', ')}` }), {
        error: 'events is an array of event types, e.g. ["key.revoked"]',
      })
      .min(1, 'choose at least one event')
      .refine((l) => new Set(l).size === l.length, 'events lists an event twice; list each once'),
    expiringDays: z
      .int({ error: 'expiringDays is a whole number of days' })
      .min(1, 'expiringDays is at least 1')
      .max(90, 'expiringDays is at most 90')
      .optional(),
    description: z
      .string({ error: 'description must be a string' })
      .trim()
      .min(1, 'description cannot be blank; leave it out for none')
      .max(200, 'description is at most 200 characters')
      .regex(PRINTABLE, 'description cannot hold control characters')
      .optional(),
    allOwners: z
      .literal(true, { error: 'allOwners is true or left out' })
      .optional()
      .describe('Administrators: the key events of every user'),
  })
  .meta({
    examples: [
      { url: 'https://hooks.example.com/tollgate', events: ['key.revoked', 'key.leaked', 'credits.low'] },
      { url: 'https://hooks.example.com/expiry', events: ['key.expiring'], expiringDays: 14 },
    ],
  });

/**
 * POST /webhooks: registers an endpoint for the caller's key events (an administrator's may take
 * every user's). The answer carries its signing secret, the only time it is sent.
 */
function createWebhook(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    if (!req.is('application/json'))
      throw new TollgateError(
        'unsupported_media_type',
        'send the webhook as JSON with "Content-Type: application/json"',
      );
    const body = validate(createWebhookBodySchema, req.body, 'body');
    const caller = callerOf(res);
    if (body.allOwners === true) requireAdmin(caller, deps.admin.groupsClaim);
    const refusal = deps.webhooks.sender.refusal(new URL(body.url));
    if (refusal !== undefined) throw new TollgateError('invalid_field', `url: ${refusal}`, { field: 'url' });
    const theirs = (await deps.webhooks.store.list()).filter((w) => w.spec.owner === caller.subject);
    if (theirs.length >= MAX_WEBHOOKS_PER_OWNER)
      throw new TollgateError(
        'too_many_webhooks',
        `you have ${theirs.length} webhooks, the most one user may have; delete one (DELETE /api/v1/webhooks/<id>) first`,
      );
    const id = newWebhookId();
    const webhook: Webhook = {
      apiVersion: WEBHOOK_API_VERSION,
      kind: WEBHOOK_KIND,
      metadata: { name: webhookName(id) },
      spec: {
        owner: caller.subject,
        url: body.url,
        events: body.events,
        secretVersion: 1,
        ...(body.allOwners === true ? { allOwners: true } : {}),
        ...(body.expiringDays === undefined ? {} : { expiringDays: body.expiringDays }),
        ...(body.description === undefined ? {} : { description: body.description }),
      },
    };
    const created = await deps.webhooks.store.create(webhook);
    // As a key (create-key.ts): an offboarding that began while this call ran either lists the
    // endpoint after this point and removes it, or is seen here, and the endpoint is undone.
    try {
      await deps.offboarded.check(caller);
    } catch (e) {
      await deps.webhooks.store
        .delete(created)
        .catch((undo: unknown) =>
          deps.log.error({ err: undo, webhook: id }, 'could not undo a webhook made during an offboarding'),
        );
      throw e;
    }
    deps.webhooks.dispatcher.forgetEndpoints();
    deps.audit.record({
      action: 'webhook.created',
      owner: caller.subject,
      actor: caller.subject,
      req,
      detail: {
        webhook: id,
        url: body.url,
        events: body.events.join(','),
        ...(body.allOwners ? { allOwners: 'true' } : {}),
      },
    });
    res
      .status(201)
      .set({ Location: `${req.baseUrl}/webhooks/${id}`, 'Cache-Control': 'no-store' })
      .json({ ...toWebhookView(created), secret: webhookSecret(deps.sealer, created) });
  };
}

export const createWebhookRoute: ManagementRoute = {
  method: 'post',
  path: '/webhooks',
  operationId: 'createWebhook',
  summary:
    'Register an endpoint for your key events; the answer holds its signing secret, the only time it is sent',
  body: { schema: createWebhookBodySchema, required: true },
  ok: { status: 201, description: 'The endpoint and its signing secret', schema: webhookWithSecretSchema },
  errors: [400, 401, 403, 409, 413, 415, 503],
  handler: createWebhook,
};
