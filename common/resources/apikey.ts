import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import {
  apiKeySpecSchema as generatedApiKeySpec,
  apiKeyStatusSchema as generatedApiKeyStatus,
} from './generated/apikeys.js';
import { isCidr } from '../net/cidr.js';
import type { KeyGrant } from './grant.js';
import { identityGrant, type FoundIdentity } from './identity.js';

/**
 * The ApiKey resource (tollgate.dev/v1alpha1): one key, holding only the SHA-256 of its value.
 * Kubernetes (or the manifest directory in standalone mode) is its source of truth; the Redis key
 * index entry is derived from it with `toKeyGrant`.
 */
export const API_KEY_GROUP = 'tollgate.dev';
export const API_KEY_VERSION = 'v1alpha1';
export const API_KEY_API_VERSION = `${API_KEY_GROUP}/${API_KEY_VERSION}`;
export const API_KEY_KIND = 'ApiKey';
export const API_KEY_PLURAL = 'apikeys';
/** The operator's finalizer: a deleted key's index entry goes, and every gateway is told, first. */
export const API_KEY_FINALIZER = 'tollgate.dev/key-index';

/** A key id: 20 lowercase hex characters, random but not secret (it names the resource). */
export const KEY_ID_PATTERN = /^[0-9a-f]{20}$/;
export const newKeyId = (): string => randomBytes(10).toString('hex');
export const apiKeyName = (id: string): string => `key-${id}`;
const NAME_PATTERN = /^key-[0-9a-f]{20}$/;

export const rateLimitSchema = z.strictObject({
  requests: z.int().min(1).max(1_000_000),
  windowSeconds: z.int().min(1).max(86_400),
});

/** Credits as the management API takes them. */
export const creditsInputSchema = z.strictObject({
  amount: z
    .int({ error: 'amount is a whole number of calls' })
    .min(0, 'amount cannot be negative')
    .max(1_000_000_000_000, 'amount is at most 1,000,000,000,000'),
  refill: z
    .enum(['daily', 'monthly'], { error: 'refill is "daily" or "monthly"; leave it out for none' })
    .optional(),
});

/** The most named limits a key carries. */
export const MAX_NAMED_LIMITS = 8;

/** A named limit as the management API takes it (the CRD's rules, with messages that say what to fix). */
export const namedLimitInputSchema = z.strictObject({
  name: z
    .string({ error: 'a limit name is a string' })
    .regex(
      /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
      'a limit name is lower-case letters, digits and dashes, e.g. burst or per-day',
    )
    .max(32, 'a limit name is at most 32 characters'),
  requests: z
    .int({ error: 'requests is a whole number' })
    .min(1, 'requests is at least 1')
    .max(1_000_000_000, 'requests is at most 1,000,000,000'),
  windowSeconds: z
    .int({ error: 'windowSeconds is a whole number of seconds' })
    .min(1, 'windowSeconds is at least 1')
    .max(2_678_400, 'windowSeconds is at most 2,678,400 (31 days)'),
});

export const namedLimitsInputSchema = z
  .array(namedLimitInputSchema, { error: 'limits is an array of {name, requests, windowSeconds}' })
  .min(1, 'limits lists at least one limit; leave it out for none')
  .max(MAX_NAMED_LIMITS, `a key has at most ${MAX_NAMED_LIMITS} limits`)
  .refine(
    (l) => new Set(l.map((x) => x.name)).size === l.length,
    'limits names a limit twice; name each once',
  );

// The field rules come from crds/apikeys.yaml (one source: common/resources/generated/); the
// cross-field rule the CRD states in CEL is restated here for input that has not reached the API server.
export const apiKeySpecSchema = generatedApiKeySpec
  .refine((s) => s.module !== 'bda' || s.roles.length === 1, {
    message: 'a bda key has exactly one role, the id of the workflow it calls',
    path: ['roles'],
  })
  .refine((s) => s.module === 'platform' || s.models === undefined, {
    message: "models limits a platform key; a bda key calls its own workflow's models only",
    path: ['models'],
  })
  .refine((s) => (s.allowedCidrs ?? []).every(isCidr), {
    message: 'each allowedCidrs entry must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32',
    path: ['allowedCidrs'],
  });

export const apiKeyStatusSchema = generatedApiKeyStatus;

export const apiKeySchema = z.object({
  apiVersion: z.literal(API_KEY_API_VERSION),
  kind: z.literal(API_KEY_KIND),
  metadata: z
    .object({
      name: z.string().regex(NAME_PATTERN),
      namespace: z.string().optional(),
      creationTimestamp: z.iso.datetime({ offset: true }).optional(),
      labels: z.record(z.string(), z.string()).optional(),
      annotations: z.record(z.string(), z.string()).optional(),
      resourceVersion: z.string().optional(),
      uid: z.string().optional(),
    })
    .loose(),
  spec: apiKeySpecSchema,
  status: apiKeyStatusSchema.optional(),
});

export type ApiKey = z.infer<typeof apiKeySchema>;
export type ApiKeySpec = z.infer<typeof apiKeySpecSchema>;
export type ApiKeyStatus = z.infer<typeof apiKeyStatusSchema>;

/** The id part of `key-<id>`. */
export const apiKeyId = (key: ApiKey): string => key.metadata.name.slice('key-'.length);

/** A new ApiKey resource for a freshly generated key (creationTimestamp is set by the store). */
export function newApiKey(id: string, spec: ApiKeySpec): ApiKey {
  return { apiVersion: API_KEY_API_VERSION, kind: API_KEY_KIND, metadata: { name: apiKeyName(id) }, spec };
}

/** Looks an identity up by name: where `toKeyGrant` finds a key's. */
export type IdentityLookup = (name: string) => FoundIdentity;

/**
 * The Redis key-index entry for a key: what it grants, never the hash or the key. A key of an
 * identity carries the identity's limits and credits too (`identities` finds them).
 */
export function toKeyGrant(key: ApiKey, identities: IdentityLookup): KeyGrant {
  const {
    module,
    roles,
    owner,
    name,
    rateLimit,
    limits,
    credits,
    allowedCidrs,
    models,
    rolled,
    countsAs,
    identity,
  } = key.spec;
  const grant: KeyGrant = { id: apiKeyId(key), owner, module, roles: [...roles] };
  if (identity !== undefined) grant.identity = identityGrant(identity, identities(identity), owner);
  if (name !== undefined) grant.name = name;
  const expiresAt = stopsAt(key.spec);
  if (expiresAt !== undefined) grant.expiresAt = expiresAt;
  if (rateLimit !== undefined) grant.rateLimit = { ...rateLimit };
  if (limits !== undefined) grant.limits = limits.map((l) => ({ ...l }));
  if (credits !== undefined) grant.credits = { ...credits };
  if (countsAs !== undefined) grant.countsAs = countsAs;
  if (allowedCidrs !== undefined) grant.allowedCidrs = [...allowedCidrs];
  if (models !== undefined) grant.models = [...models];
  // Only a grace period that ends before the key's own expiry makes the key stop as "rolled".
  if (rolled !== undefined && expiresAt === rolled.graceEndsAt) grant.rolledTo = rolled.to;
  return grant;
}

/** When the key stops being accepted: its expiry, or the end of its grace period once rolled. */
export function stopsAt(spec: ApiKeySpec): string | undefined {
  const { expiresAt, rolled } = spec;
  if (rolled === undefined) return expiresAt;
  if (expiresAt === undefined) return rolled.graceEndsAt;
  return Date.parse(rolled.graceEndsAt) < Date.parse(expiresAt) ? rolled.graceEndsAt : expiresAt;
}
