import { z } from 'zod';
import { WEBHOOK_EVENTS } from '../../common/resources/webhook.js';
import type { KeyUsage } from '../../common/apikey/usage.js';
import {
  apiKeyId,
  KEY_ID_PATTERN,
  rateLimitSchema,
  stopsAt,
  type ApiKey,
} from '../../common/resources/apikey.js';

/**
 * What the management API answers, as zod schemas: the handlers build these shapes, and the
 * OpenAPI document (openapi.ts) is generated from them, so the contract and the code are one.
 */
const dateTime = z.iso.datetime({ offset: true });

/** A key as the management API shows it: never the hash, never the key. */
export const apiKeyViewSchema = z.object({
  id: z.string().regex(KEY_ID_PATTERN),
  name: z.string().optional(),
  start: z
    .string()
    .describe('The first 8 characters of the key (of an imported key, those its administrator gave)'),
  imported: z
    .literal(true)
    .optional()
    .describe('Made by another gateway and imported by its SHA-256 (POST /admin/apikeys/import)'),
  module: z.enum(['bda', 'platform']),
  roles: z.array(z.string()),
  createdAt: dateTime.optional(),
  lastUsed: dateTime.optional(),
  requestCount: z.int().min(0),
  refusalCount: z.int().min(0).describe('Calls refused although the key exists'),
  rowCount: z.int().min(0).describe('Rows of the inference batches its admitted calls sent'),
  expiresAt: dateTime.optional(),
  rateLimit: rateLimitSchema.optional(),
  credits: z
    .object({ amount: z.int().min(0), refill: z.enum(['daily', 'monthly']).optional() })
    .optional()
    .describe('Calls the key may make, in all or each UTC day or month with refill'),
  limits: z
    .array(z.object({ name: z.string(), requests: z.int().min(1), windowSeconds: z.int().min(1) }))
    .optional()
    .describe('Named limits besides rateLimit; a call must fit them all'),
  allowedCidrs: z.array(z.string()).optional(),
  models: z
    .array(z.string())
    .optional()
    .describe('The models the key may call (names or * patterns); absent: any'),
  identity: z
    .string()
    .optional()
    .describe('The identity the key belongs to: its limits and credits hold across all its keys'),
  rolledFrom: z.string().optional().describe('The key this one replaced, when it was made by a roll'),
  rolled: z
    .object({ to: z.string(), at: dateTime, graceEndsAt: dateTime })
    .optional()
    .describe('Set once the key was rolled: the key that replaced it and the end of its grace period'),
  state: z
    .enum(['active', 'rolled', 'expired'])
    .describe('rolled while its grace period runs; expired once past its expiry or its grace end'),
});
export type ApiKeyView = z.infer<typeof apiKeyViewSchema>;

const keyRowSchema = apiKeyViewSchema.extend({
  requestsPerHour: z.array(z.int().min(0)).describe('Requests per hour over the last 24 hours, oldest first'),
});

export const keyPageSchema = z.object({
  items: z.array(keyRowSchema),
  nextCursor: z.string().optional(),
});

/** An administrator's listing: anyone's keys, each with its owner. */
export const ownedKeyPageSchema = z.object({
  items: z.array(
    keyRowSchema.extend({
      owner: z.string().describe('The subject of the user who created the key'),
      ownerName: z.string().optional().describe('Their name when they created it'),
    }),
  ),
  nextCursor: z.string().optional(),
});

export const callerSchema = z.object({
  subject: z.string(),
  name: z.string().optional(),
  groups: z.array(z.string()),
  admin: z.boolean().describe('A member of an administrator group: may act on every user’s keys'),
});

export const offboardResultSchema = z.object({
  owner: z.string(),
  revoked: z.array(z.string()).describe('Ids of the keys revoked now'),
  webhooksRemoved: z.array(z.string()).describe('Ids of the user’s webhook endpoints removed'),
});

export const createdKeySchema = apiKeyViewSchema.extend({
  key: z.string().describe('The key itself: shown in this answer only, never again'),
});

export const rolledKeySchema = createdKeySchema.extend({
  rolled: apiKeyViewSchema.describe('The old key, as it is after the roll'),
});

const usagePointSchema = z.object({
  at: dateTime,
  requests: z.int().min(0),
  refusals: z.int().min(0),
  rows: z
    .int()
    .min(0)
    .describe('Rows of the inference batches admitted (the first dimension of their inputs)'),
});
/** A key's credits now. */
export const creditsStateSchema = z.object({
  amount: z.int().min(0),
  spent: z.int().describe('Spent this period (below 0 after a top-up larger than what was spent)'),
  remaining: z.int().min(0),
  refill: z.enum(['daily', 'monthly']).optional(),
  refillsAt: dateTime.optional().describe('When the next refill comes'),
});

/** An identity as its owner and administrators see it. */
export const identityViewSchema = z.object({
  name: z.string().describe('Its id, in keys and URLs'),
  displayName: z.string().optional(),
  owner: z.string().describe('The subject of the user who made it; only they add keys to it'),
  ownerName: z.string().optional(),
  createdAt: dateTime.optional(),
  limits: z
    .array(z.object({ name: z.string(), requests: z.int().min(1), windowSeconds: z.int().min(1) }))
    .optional()
    .describe('Named limits counted across all its keys'),
  credits: creditsStateSchema.optional().describe('Credits shared by all its keys, now'),
  keys: z.int().min(0).optional().describe('How many keys belong to it (not in listings)'),
  usage: z
    .object({ requests: z.int().min(0), refusals: z.int().min(0), rows: z.int().min(0) })
    .optional()
    .describe(
      'What its keys (those it has now) have done in all: calls admitted and refused, rows of inference batches (not in listings)',
    ),
});
export type IdentityView = z.infer<typeof identityViewSchema>;

export const identityListSchema = z.object({ items: z.array(identityViewSchema) });

/** A webhook endpoint as its owner sees it (never its secret, shown once when made or rotated). */
export const webhookViewSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  owner: z.string(),
  allOwners: z.literal(true).optional().describe('An administrator’s: every user’s key events'),
  expiringDays: z
    .int()
    .optional()
    .describe('Days before a key’s expiry that key.expiring is sent (default 7)'),
  description: z.string().optional(),
  createdAt: dateTime.optional(),
});
export type WebhookView = z.infer<typeof webhookViewSchema>;

export const webhookListSchema = z.object({ items: z.array(webhookViewSchema) });

export const webhookWithSecretSchema = webhookViewSchema.extend({
  secret: z
    .string()
    .describe(
      'The signing secret (Standard Webhooks, whsec_…): shown in this answer only; rotate to get another',
    ),
});

export const deliverySchema = z.object({
  id: z.string().describe('The message id, sent as webhook-id on every attempt'),
  type: z.string(),
  createdAt: dateTime,
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.int().min(0),
  lastAttemptAt: dateTime.optional(),
  lastStatus: z.int().optional().describe('The receiver’s HTTP status on the last attempt'),
  lastError: z.string().optional(),
  nextAttemptAt: dateTime.optional(),
});

export const deliveryListSchema = z.object({ items: z.array(deliverySchema) });

const limitUsageSchema = z.object({
  name: z.string().optional().describe('Absent for the key’s own rateLimit'),
  requests: z.int().min(1),
  windowSeconds: z.int().min(1),
  used: z.int().min(0).describe('Counted in this window (replicas lease a few calls ahead)'),
  resetsAt: dateTime.describe('When the next window begins'),
});

export const keyUsageSchema = z.object({
  id: z.string(),
  requestCount: z.int().min(0),
  refusalCount: z.int().min(0),
  rowCount: z
    .int()
    .min(0)
    .describe(
      'Rows of the inference batches the key’s admitted calls sent (the first dimension of their inputs)',
    ),
  lastUsed: dateTime.optional(),
  perMinute: z.array(usagePointSchema).describe('The last 24 hours, oldest first'),
  perHour: z.array(usagePointSchema).describe('The last 30 days, oldest first'),
  topEndpoints: z.array(z.object({ endpoint: z.string(), requests: z.int().min(0) })),
  credits: creditsStateSchema.optional(),
  identityCredits: creditsStateSchema
    .optional()
    .describe('The credits of the key’s identity, shared with its other keys'),
  limits: z
    .array(limitUsageSchema)
    .optional()
    .describe('Each of the key’s limits (its rateLimit unnamed) in its current window'),
  identityLimits: z
    .array(limitUsageSchema)
    .optional()
    .describe('Each named limit of the key’s identity in its current window, shared with its other keys'),
});

export const modulesSchema = z.object({
  modules: z.array(
    z.object({
      module: z.enum(['bda', 'platform']),
      description: z.string(),
      roles: z.array(z.object({ id: z.string(), description: z.string().optional() })),
    }),
  ),
});

export const errorSchema = z.object({
  error: z.string().describe('What went wrong and what to do about it'),
  code: z.string().describe('Stable, machine-readable'),
  field: z.string().optional().describe('The request field at fault'),
});

const later = (a: string | undefined, b: string | undefined): string | undefined =>
  a === undefined ? b : b === undefined ? a : Date.parse(a) >= Date.parse(b) ? a : b;

/**
 * Usage comes from Redis (written by the gateway as requests pass) and from the resource's status
 * (synced by the operator, and what survives a Redis flush); the more recent figure wins.
 */
export function toApiKeyView(key: ApiKey, usage: KeyUsage | undefined): ApiKeyView {
  const {
    name,
    start,
    module,
    roles,
    expiresAt,
    rateLimit,
    limits,
    allowedCidrs,
    models,
    rolledFrom,
    rolled,
  } = key.spec;
  const ends = stopsAt(key.spec);
  const view: ApiKeyView = {
    id: apiKeyId(key),
    start,
    module,
    roles: [...roles],
    requestCount: Math.max(usage?.count ?? 0, key.status?.requestCount ?? 0),
    refusalCount: usage?.refused ?? 0,
    rowCount: usage?.rows ?? 0,
    state:
      ends !== undefined && Date.parse(ends) <= Date.now()
        ? 'expired'
        : rolled !== undefined
          ? 'rolled'
          : 'active',
  };
  if (name !== undefined) view.name = name;
  if (key.spec.imported === true) view.imported = true;
  if (key.metadata.creationTimestamp !== undefined) view.createdAt = key.metadata.creationTimestamp;
  const lastUsed = later(usage?.lastUsed, key.status?.lastUsed);
  if (lastUsed !== undefined) view.lastUsed = lastUsed;
  if (expiresAt !== undefined) view.expiresAt = expiresAt;
  if (rateLimit !== undefined) view.rateLimit = { ...rateLimit };
  if (limits !== undefined) view.limits = limits.map((l) => ({ ...l }));
  if (key.spec.credits !== undefined) view.credits = { ...key.spec.credits };
  if (allowedCidrs !== undefined) view.allowedCidrs = [...allowedCidrs];
  if (models !== undefined) view.models = [...models];
  if (key.spec.identity !== undefined) view.identity = key.spec.identity;
  if (rolledFrom !== undefined) view.rolledFrom = rolledFrom;
  if (rolled !== undefined) view.rolled = { ...rolled };
  return view;
}

const tensorSchema = z.object({ name: z.string(), datatype: z.string(), shape: z.array(z.int()) });

/** A Model as the panel's Models page shows it. */
export const modelViewSchema = z.object({
  name: z.string(),
  workflow: z.string().optional(),
  storageUri: z.string().describe("The default version's model folder"),
  phase: z.enum(['Pending', 'Loading', 'Ready', 'Failed']),
  replicas: z.int().min(0),
  readyReplicas: z.int().min(0),
  message: z.string().optional().describe('The condition that is not met, and what to change'),
  inputs: z.array(tensorSchema),
  outputs: z.array(tensorSchema),
  defaultVersion: z.string().optional(),
  versions: z
    .array(
      z.object({
        name: z.string(),
        traffic: z.int().min(0).max(100),
        cohort: z
          .string()
          .optional()
          .describe(
            'The callers whose calls it takes, every one of them (a cohort, besides its traffic share)',
          ),
        phase: z.enum(['Pending', 'Loading', 'Ready', 'Failed', 'Draining']),
        readyReplicas: z.int().min(0),
        storageUri: z.string().optional(),
      }),
    )
    .describe('Each version (one unnamed for a model without spec.versions), with its share of calls'),
  perMinute: z
    .array(
      z.object({
        at: dateTime,
        calls: z.int().min(0),
        errors: z.int().min(0),
        meanLatencyMs: z.number().min(0),
      }),
    )
    .describe('Calls over the last hour, oldest first, from every gateway replica'),
  shadow: z
    .object({
      version: z.string(),
      percent: z.int().min(1).max(100),
      calls: z.int().min(0),
      agreed: z.int().min(0),
      failed: z.int().min(0),
      agreementRate: z.number().min(0).max(1).nullable(),
      meanLatencyMs: z.number().min(0),
      servingMeanLatencyMs: z.number().min(0),
    })
    .optional()
    .describe(
      'spec.shadow and its copies over the last hour: how many agreed with the serving version, failed, and both mean runtime times',
    ),
  rollout: z
    .object({
      version: z.string(),
      phase: z.enum(['Waiting', 'Progressing', 'Promoted', 'RolledBack']),
      weight: z.int().min(0).max(100),
      cohort: z.string().optional().describe('The callers the canary serves, with spec.rollout.cohort'),
      message: z.string().optional(),
    })
    .optional()
    .describe("spec.rollout's canary analysis, as the operator last reported it"),
  exampleRequest: z
    .object({
      inputs: z.array(
        tensorSchema.extend({
          data: z.array(z.union([z.number(), z.string(), z.boolean()])),
          parameters: z.object({ content_type: z.string() }).optional(),
        }),
      ),
    })
    .optional()
    .describe('A V2 inference request built from the declared inputs'),
});
export type ModelView = z.infer<typeof modelViewSchema>;

export const modelPageSchema = z.object({ items: z.array(modelViewSchema) });
