import { z } from 'zod';
import { isCidr } from '../../common/net/cidr.js';
import type { WebhookSettings } from '../webhooks/dispatcher.js';
import { listOf } from './fields.js';

/** The webhooks' settings (gateway/webhooks), a part of the gateway's. */
export const webhookConfigShape = {
  /**
   * Webhooks may POST to addresses inside these networks too: loopback, private and link-local
   * addresses are refused by default (a user chooses the URL; the gateway must not become their
   * way into the cluster).
   */
  webhookAllowedCidrs: listOf(
    z.string().refine(isCidr, 'each entry is a CIDR such as 10.0.0.0/8 or fd00::/8'),
  ).default([]),
  /**
   * Webhook URLs may name only these hosts (`hooks.example.com`, or `*.example.com` for its
   * subdomains). Empty: any host with a public address.
   */
  webhookAllowedHosts: listOf(
    z
      .string()
      .regex(/^(\*\.)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/i, 'each entry is a host name, or *. and a domain'),
  ).default([]),
  /** Webhook URLs may be http:// (else https:// only). */
  webhookAllowHttp: z
    .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')])
    .default(false),
  /** Seconds between a failed delivery and its next attempts (Standard Webhooks' schedule). */
  webhookRetrySeconds: listOf(z.number().positive().max(86_400), Number)
    .pipe(z.array(z.number()).max(20, 'at most 20 retries'))
    .default([5, 300, 1_800, 7_200, 18_000, 36_000, 36_000]),
  /** How often due webhook deliveries are sent. */
  webhookPollMs: z.coerce.number().int().min(10).max(60_000).default(1_000),
  /** How often keys are checked for a coming expiry (key.expiring). */
  webhookExpiringScanMs: z.coerce.number().int().min(100).default(3_600_000),
};

/** The webhooks' settings when none are given (the defaults above). */
export const DEFAULT_WEBHOOK_SETTINGS = webhookSettingsOf(z.object(webhookConfigShape).parse({}));

/** What the management API's webhooks take of the gateway's settings. */
export function webhookSettingsOf(c: {
  webhookAllowedCidrs: string[];
  webhookAllowedHosts: string[];
  webhookAllowHttp: boolean;
  webhookRetrySeconds: number[];
  webhookPollMs: number;
  webhookExpiringScanMs: number;
}): WebhookSettings {
  return {
    allowedCidrs: c.webhookAllowedCidrs,
    allowedHosts: c.webhookAllowedHosts,
    allowHttp: c.webhookAllowHttp,
    retrySeconds: c.webhookRetrySeconds,
    pollMs: c.webhookPollMs,
    expiringScanMs: c.webhookExpiringScanMs,
  };
}
