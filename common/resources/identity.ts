import { z } from 'zod';
import type { identitySpecSchema } from './generated/identities.js';
import { identitySchema as generatedIdentity } from './generated/identities.js';
import type { EntrySealer } from '../redis/sealed-entry.js';
import type { IdentityGrant } from './grant.js';

/**
 * The Identity resource (tollgate.dev/v1alpha1): whom several keys belong to (a customer, a team,
 * a service account). Its field rules are crds/identities.yaml's (generated/identities.ts). Its
 * limits reach the hot path inside each of its keys' index entries (`identityGrant`), so a call
 * reads one entry, never a second.
 */
export {
  identitySpecSchema,
  type Identity,
  type IdentitySpec,
  IDENTITY_API_VERSION,
  IDENTITY_PLURAL,
} from './generated/identities.js';

export const IDENTITY_GROUP = 'tollgate.dev';
export const IDENTITY_VERSION = 'v1alpha1';
export const IDENTITY_KIND = 'Identity';

/** An identity's name: a DNS label, as the CRD's CEL rule says. */
export const IDENTITY_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export const identityNameSchema = z
  .string({ error: 'identity is the name of an identity, a string' })
  .regex(
    IDENTITY_NAME_PATTERN,
    'an identity name is lower-case letters, digits and dashes (at most 63), e.g. acme-corp',
  );

export const identitySchema = generatedIdentity.extend({
  metadata: generatedIdentity.shape.metadata.extend({ name: identityNameSchema }),
});

/**
 * The account an identity's counters are kept under: a digest of its name keyed by the signing
 * key (grant.ts, identityGrantSchema.account says why). The operator and the central gateways,
 * which hold that key, all make the same one. A name may be freed and taken again: the management
 * API clears the counters when another owner makes an identity of that name (create-identity.ts),
 * so it never starts with what another's spent.
 */
export function identityCounterAccount(sealer: Pick<EntrySealer, 'deriveSecret'>, name: string): string {
  return `@${sealer.deriveSecret(`identity-counters:${name}`).toString('hex').slice(0, 24)}`;
}

/** An identity as a key's entry is made from it: its spec (undefined: there is none) and account. */
export interface FoundIdentity {
  spec: z.infer<typeof identitySpecSchema> | undefined;
  account: string;
}

/**
 * What an identity puts in each of its keys' index entries: its name, limits and credits. Only an
 * identity of the key's own owner counts: a key left naming a deleted identity (made while it was
 * deleted, on another replica) must not take on another user's identity made later by that name.
 */
export function identityGrant(name: string, found: FoundIdentity, keyOwner: string): IdentityGrant {
  const { spec, account } = found;
  // Missing (deleted, never made, or another user's): the key is refused rather than let off the
  // identity's limits, or spending another's.
  if (spec === undefined || spec.owner !== keyOwner) return { name, account, missing: true };
  const grant: IdentityGrant = { name, account };
  if (spec.limits !== undefined) grant.limits = spec.limits.map((l) => ({ ...l }));
  if (spec.credits !== undefined) grant.credits = { ...spec.credits };
  return grant;
}
