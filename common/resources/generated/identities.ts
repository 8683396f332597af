// Generated from crds/identities.yaml by tools/codegen/generate-types.ts. Do not edit: change the CRD
// and run `npm run codegen`.
import { z } from 'zod';
import { objectMetaSchema } from '../object-meta.js';

export const IDENTITY_API_VERSION = 'tollgate.dev/v1alpha1';
export const IDENTITY_PLURAL = 'identities';

export const identitySpecSchema = z.object({
  /** The subject of the user who created the identity; only they (and administrators) add keys to it. */
  owner: z.string().min(1).max(255),
  /** The owner's name when the identity was created, shown to administrators. */
  ownerName: z.string().max(100).optional(),
  /** A label chosen by the owner (the customer's or team's name). */
  displayName: z.string().max(100).optional(),
  /** Calls all the identity's keys together may make: amount in all, or amount each UTC day or month with refill. At zero the answer is 429 credits_exhausted. */
  credits: z
    .object({
      amount: z.int().min(0).max(1000000000000),
      refill: z.enum(['daily', 'monthly']).optional(),
    })
    .optional(),
  /** Named rate limits counted across all the identity's keys (for example a burst per second and a quota per day); a call must fit them and its key's own. */
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
});
export type IdentitySpec = z.infer<typeof identitySpecSchema>;

/** Whom several API keys belong to (a customer, a team, a service account); its limits and credits are counted across all of them. */
export const identitySchema = z.object({
  apiVersion: z.literal('tollgate.dev/v1alpha1'),
  kind: z.literal('Identity'),
  metadata: objectMetaSchema,
  spec: identitySpecSchema,
});
export type Identity = z.infer<typeof identitySchema>;
