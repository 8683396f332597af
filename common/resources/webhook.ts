import { randomBytes } from 'node:crypto';
import { webhookSchema as generatedWebhook, webhookSpecSchema } from './generated/webhooks.js';

/**
 * The Webhook resource (tollgate.dev/v1alpha1): an endpoint that receives key events. Its field
 * rules are crds/webhooks.yaml's (generated/webhooks.ts). It holds no secret (see
 * gateway/webhooks/secret.ts).
 */
export {
  webhookSpecSchema,
  type Webhook,
  type WebhookSpec,
  WEBHOOK_API_VERSION,
  WEBHOOK_PLURAL,
} from './generated/webhooks.js';

export const WEBHOOK_GROUP = 'tollgate.dev';
export const WEBHOOK_VERSION = 'v1alpha1';
export const WEBHOOK_KIND = 'Webhook';

/** The event types an endpoint may ask for, as the CRD lists them. */
export const WEBHOOK_EVENTS = webhookSpecSchema.shape.events.element.options;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

/** A webhook id: 20 lowercase hex characters; its resource is `wh-<id>`. */
export const WEBHOOK_ID_PATTERN = /^[0-9a-f]{20}$/;
export const newWebhookId = (): string => randomBytes(10).toString('hex');
export const webhookName = (id: string): string => `wh-${id}`;
export const webhookId = (name: string): string => name.slice('wh-'.length);

export const webhookSchema = generatedWebhook.extend({
  metadata: generatedWebhook.shape.metadata.extend({
    name: generatedWebhook.shape.metadata.shape.name.regex(/^wh-[0-9a-f]{20}$/),
  }),
});

/** Days before a key's expiry that key.expiring is sent, when the endpoint does not say. */
export const DEFAULT_EXPIRING_DAYS = 7;
