// Generated from crds/apikeys.yaml by tools/codegen/generate-types.ts. Do not edit: change the CRD
// and run `npm run codegen`.
import { z } from 'zod';
import { objectMetaSchema } from '../object-meta.js';

export const APIKEY_API_VERSION = 'tollgate.dev/v1alpha1';
export const APIKEY_PLURAL = 'apikeys';

export const apiKeySpecSchema = z.object({
  /** SHA-256 (lowercase hex) of the key value. The key itself is never stored. */
  hash: z.string().regex(new RegExp('^[0-9a-f]{64}$')),
  /** The first 8 characters of the key (of an imported key, the characters its administrator gave), shown in listings. */
  start: z.string().regex(new RegExp('^[0-9A-Za-z_.:+/=-]{1,8}$')),
  /** The key was made by another gateway and imported by its SHA-256; its value may be of that gateway's format. */
  imported: z.boolean().optional(),
  /** The module the key gives access to. */
  module: z.enum(['bda', 'platform']),
  /** bda: exactly one role, the workflow id. platform: roles from the catalogue. */
  roles: z.array(z.string().min(1).max(128)).min(1).max(32),
  /** The subject of the user who created the key. */
  owner: z.string().min(1).max(255),
  /** The owner's name when the key was created (preferred_username, email or name of the token), shown to administrators. */
  ownerName: z.string().max(100).optional(),
  /** A label chosen by the owner. */
  name: z.string().max(100).optional(),
  /** After this instant the key is refused. Absent means it does not expire. */
  expiresAt: z.iso.datetime({ offset: true }).optional(),
  /** Requests allowed per fixed window for this key. */
  rateLimit: z
    .object({
      requests: z.int().min(1).max(1000000),
      windowSeconds: z.int().min(1).max(86400),
    })
    .optional(),
  /** Calls the key may make: amount in all, or amount each UTC day or month with refill. Each admitted call spends one, counted across every gateway replica; at zero the answer is 429 credits_exhausted. */
  credits: z
    .object({
      amount: z.int().min(0).max(1000000000000),
      refill: z.enum(['daily', 'monthly']).optional(),
    })
    .optional(),
  /** Named rate limits besides rateLimit (for example a burst per second and a quota per day), each a fixed window counted across every gateway replica; a call must fit them all, and the 429 names the one it did not fit. */
  limits: z
    .array(
      z.object({
        name: z.string().min(1).max(32).regex(new RegExp('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')),
        requests: z.int().min(1).max(1000000000),
        windowSeconds: z.int().min(1).max(2678400),
      }),
    )
    .min(1)
    .max(8)
    .optional(),
  /** The Identity (same namespace) the key belongs to: its limits and credits are counted across all its keys, besides the key's own. A key whose identity is missing is refused. */
  identity: z.string().max(63).regex(new RegExp('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')).optional(),
  /** Set by a roll: the id of the first key of the roll chain, whose counters (rate limits, credits) this key shares, so rolling a key resets no quota. */
  countsAs: z.string().regex(new RegExp('^[0-9a-f]{20}$')).optional(),
  /** The id of the key this one replaced when that key was rolled. */
  rolledFrom: z.string().regex(new RegExp('^[0-9a-f]{20}$')).optional(),
  /** Set when the key is rolled: the key that replaced it, and the end of its grace period, after which it is refused. */
  rolled: z
    .object({
      /** The id of the key that replaced this one. */
      to: z.string().regex(new RegExp('^[0-9a-f]{20}$')),
      /** When the key was rolled. */
      at: z.iso.datetime({ offset: true }),
      /** When this key stops being accepted. */
      graceEndsAt: z.iso.datetime({ offset: true }),
    })
    .optional(),
  /** Client networks (CIDR, IPv4 or IPv6) the key may be used from. Absent means from anywhere. */
  allowedCidrs: z.array(z.string().min(3).max(49)).min(1).max(32).optional(),
  /** The models a platform key may call (V2 inference, metadata, readiness): names, or patterns where * stands for any run of name characters (model-fraud-*). Absent means every model the key's roles allow. */
  models: z
    .array(z.string().min(1).max(63).regex(new RegExp('^[a-z0-9*]([-a-z0-9*]*[a-z0-9*])?$')))
    .min(1)
    .max(32)
    .optional(),
});
export type ApiKeySpec = z.infer<typeof apiKeySpecSchema>;

export const apiKeyStatusSchema = z.object({
  /** When the key last authorised a request. */
  lastUsed: z.iso.datetime({ offset: true }).optional(),
  /** Requests authorised with this key. */
  requestCount: z.int().min(0).optional(),
});
export type ApiKeyStatus = z.infer<typeof apiKeyStatusSchema>;

/** An API key scoped to one module and its roles. Only the key's SHA-256 is stored. */
export const apiKeySchema = z.object({
  apiVersion: z.literal('tollgate.dev/v1alpha1'),
  kind: z.literal('ApiKey'),
  metadata: objectMetaSchema,
  spec: apiKeySpecSchema,
  status: apiKeyStatusSchema.optional(),
});
export type ApiKey = z.infer<typeof apiKeySchema>;
