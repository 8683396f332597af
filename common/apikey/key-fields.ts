import { z } from 'zod';
import { isCidr } from '../net/cidr.js';
import { creditsInputSchema, namedLimitsInputSchema, rateLimitSchema } from '../resources/apikey.js';
import { MODEL_SCOPE_MAX, MODEL_SCOPE_PATTERN } from './model-scope.js';

// Printable text only: a name is shown in the panel and in `kubectl get`.
const PRINTABLE = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u;

/**
 * What a key is asked for with, wherever it is asked: a new key (POST /apikeys) and an imported
 * one (POST /admin/apikeys/import, `tollgate key import`) take the same fields, checked the same.
 */
export const keyFields = {
  module: z.enum(['bda', 'platform'], { error: 'module must be "bda" or "platform"' }),
  roles: z
    .array(
      z
        .string({ error: 'each role is a string' })
        .min(1, 'a role cannot be empty')
        .max(128, 'a role is at most 128 characters'),
      {
        error: 'roles must be an array of role names, e.g. ["viewer"]',
      },
    )
    .min(1, 'choose at least one role')
    .max(32, 'a key has at most 32 roles'),
  name: z
    .string({ error: 'name must be a string' })
    .trim()
    .min(1, 'name cannot be blank; leave it out for an unnamed key')
    .max(100, 'name is at most 100 characters')
    .regex(PRINTABLE, 'name cannot hold control characters')
    .optional(),
  expiresAt: z.iso
    .datetime({
      offset: true,
      error: 'expiresAt must be an ISO 8601 date-time with a time zone, e.g. 2030-01-31T23:59:59Z',
    })
    // Kept in UTC: 9999-12-31T23:59-12:00 is in year 10000 there, which no store takes.
    .refine((v) => new Date(v).getUTCFullYear() <= 9999, 'expiresAt must fall before the year 10000 in UTC')
    .optional(),
  rateLimit: rateLimitSchema.optional(),
  limits: namedLimitsInputSchema.optional(),
  credits: creditsInputSchema.optional(),
  allowedCidrs: z
    .array(
      z
        .string({ error: 'each allowedCidrs entry is a string' })
        .max(49, 'a CIDR is at most 49 characters')
        .refine(isCidr, 'each allowedCidrs entry must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32'),
      { error: 'allowedCidrs must be an array of CIDRs, e.g. ["10.0.0.0/8"]' },
    )
    .min(1, 'allowedCidrs lists at least one network; leave it out to allow any')
    .max(32, 'a key has at most 32 allowedCidrs')
    .refine((l) => new Set(l).size === l.length, 'allowedCidrs lists a network twice; list each once')
    .optional(),
  models: z
    .array(
      z
        .string({ error: 'each models entry is a string' })
        .max(63, 'a models entry is at most 63 characters')
        .regex(
          new RegExp(MODEL_SCOPE_PATTERN),
          'each models entry is a model name or a pattern with *, e.g. model-iris or model-fraud-*',
        ),
      { error: 'models must be an array of model names or patterns, e.g. ["model-iris"]' },
    )
    .min(1, 'models lists at least one model; leave it out to allow every model the roles allow')
    .max(MODEL_SCOPE_MAX, `a key has at most ${MODEL_SCOPE_MAX} models entries`)
    .refine((l) => new Set(l).size === l.length, 'models lists an entry twice; list each once')
    .optional(),
};
