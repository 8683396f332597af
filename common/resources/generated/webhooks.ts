// Generated from crds/webhooks.yaml by tools/codegen/generate-types.ts. Do not edit: change the CRD
// and run `npm run codegen`.
import { z } from 'zod';
import { objectMetaSchema } from '../object-meta.js';

export const WEBHOOK_API_VERSION = 'tollgate.dev/v1alpha1';
export const WEBHOOK_PLURAL = 'webhooks';

export const webhookSpecSchema = z.object({
  /** The subject of the user who registered it; it receives the events of their keys and identities. */
  owner: z.string().min(1).max(255),
  /** Registered by an administrator for the events of every user's keys. */
  allOwners: z.boolean().optional(),
  /** Where events are POSTed (https, or http where the gateway allows it). */
  url: z.string().min(8).max(2048),
  /** The event types it receives. */
  events: z
    .array(
      z.enum([
        'key.created',
        'key.rolled',
        'key.revoked',
        'key.offboarded',
        'key.expiring',
        'key.leaked',
        'key.rate_limited',
        'credits.low',
        'credits.exhausted',
        'usage.minute',
      ]),
    )
    .min(1)
    .max(16),
  /** How many days before a key expires key.expiring is sent (default 7). */
  expiringDays: z.int().min(1).max(90).optional(),
  description: z.string().max(200).optional(),
  /** Which signing secret it uses (a rotation moves it on); the secret itself is derived, never stored. */
  secretVersion: z.int().min(1),
});
export type WebhookSpec = z.infer<typeof webhookSpecSchema>;

/** An endpoint that receives signed key events. */
export const webhookSchema = z.object({
  apiVersion: z.literal('tollgate.dev/v1alpha1'),
  kind: z.literal('Webhook'),
  metadata: objectMetaSchema,
  spec: webhookSpecSchema,
});
export type Webhook = z.infer<typeof webhookSchema>;
