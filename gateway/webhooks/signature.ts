import { createHmac } from 'node:crypto';
import type { EntrySealer } from '../../common/redis/sealed-entry.js';
import type { Webhook } from '../../common/resources/webhook.js';

/**
 * A webhook's signing secret, Standard Webhooks' `whsec_<base64>`: derived from the central
 * gateways' signing key, the endpoint's name and its secretVersion, so every replica signs alike
 * and no secret is stored anywhere. A rotation moves secretVersion on.
 */
export function webhookSecret(sealer: EntrySealer, webhook: Webhook): string {
  const bytes = sealer.deriveSecret(`webhook:${webhook.metadata.name}:${webhook.spec.secretVersion}`);
  return `whsec_${bytes.toString('base64')}`;
}

/**
 * The Standard Webhooks headers of one delivery: `webhook-signature` is `v1,` and the base64
 * HMAC-SHA256, keyed by the secret's bytes, of `<id>.<timestamp>.<body>`.
 */
export function signedHeaders(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${signature}`,
  };
}
