import { z } from 'zod';
import type { UsageRecord } from './records.js';

/** The CloudEvents type of a minute's usage. */
export const USAGE_EVENT_TYPE = 'dev.tollgate.usage.minute';

/** The webhook event type of usage: endpoints that ask for it receive batches of usage CloudEvents. */
export const USAGE_WEBHOOK_EVENT = 'usage.minute';

/** How an endpoint's batch of usage events is sent (CloudEvents' JSON batch format). */
export const USAGE_BATCH_CONTENT_TYPE = 'application/cloudevents-batch+json';

export const usageEventSchema = z
  .object({
    specversion: z.literal('1.0'),
    id: z
      .string()
      .describe('The same at every delivery and read of this event: deduplicate by it (with source)'),
    source: z.string().describe('The installation (the usageExportSource setting)'),
    type: z.literal(USAGE_EVENT_TYPE),
    subject: z.string().describe('Whom it bills: the key’s identity when it has one, else the key id'),
    time: z.string().describe('The minute’s start'),
    datacontenttype: z.literal('application/json'),
    data: z.object({
      keyId: z.string(),
      owner: z.string().describe('The subject of the key’s owner'),
      identity: z.string().optional(),
      target: z
        .object({ kind: z.enum(['model', 'workflow', 'platform', 'server']), name: z.string().optional() })
        .optional()
        .describe('What the calls were to; absent for refusals decided before the target was known'),
      windowStart: z.string(),
      windowEnd: z.string(),
      calls: z.number().int().describe('Calls admitted'),
      rows: z.number().int().describe('Rows of the inference batches admitted'),
      credits: z.number().int().describe('Credits the calls came to at their price'),
      refused: z.number().int().describe('Calls refused, all codes'),
      refusals: z.record(z.string(), z.number().int()).describe('Calls refused, by code'),
    }),
  })
  .describe('A minute of one key’s usage of one target, as a CloudEvent');
export type UsageEvent = z.infer<typeof usageEventSchema>;

/** A record as the CloudEvent the pull API answers and the webhooks send. */
export function toCloudEvent(r: UsageRecord, source: string): UsageEvent {
  const windowStart = new Date(r.minuteMs).toISOString();
  const data: UsageEvent['data'] = {
    keyId: r.keyId,
    owner: r.owner,
    windowStart,
    windowEnd: new Date(r.minuteMs + 60_000).toISOString(),
    calls: r.calls,
    rows: r.rows,
    credits: r.credits,
    refused: Object.values(r.refusals).reduce((a, b) => a + b, 0),
    refusals: r.refusals,
  };
  if (r.identity !== undefined) data.identity = r.identity;
  if (r.target !== undefined) data.target = r.target;
  return {
    specversion: '1.0',
    id: r.id,
    source,
    type: USAGE_EVENT_TYPE,
    subject: r.identity ?? r.keyId,
    time: windowStart,
    datacontenttype: 'application/json',
    data,
  };
}
