import { z } from 'zod';
import { readCredits, type CreditsState } from '../../common/apikey/credits.js';
import { readKeyUsage } from '../../common/apikey/usage.js';
import { TollgateError } from '../../common/errors.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';
import {
  identityCounterAccount,
  identityNameSchema,
  type Identity,
} from '../../common/resources/identity.js';
import { apiKeyId } from '../../common/resources/apikey.js';
import type { Caller } from '../auth/oidc.js';
import type { ManagementDeps } from './deps.js';
import { keyGrantOf } from './key-grant.js';
import { validate } from './validate.js';
import type { IdentityView } from './views.js';

export const identityParamsSchema = z.object({ name: identityNameSchema });

/** The `{name}` of `/identities/{name}`, checked. */
export const identityParam = (params: unknown): string => validate(identityParamsSchema, params, 'path').name;

/** Another user's identity is reported like one that does not exist, so names do not leak. */
export const identityNotFound = (name: string, field?: string): TollgateError =>
  new TollgateError(
    'identity_not_found',
    `you have no identity named "${name}"; GET /api/v1/identities lists yours, POST /api/v1/identities makes one`,
    field === undefined ? {} : { field },
  );

/** The identity if the caller owns it (or, with `admin`, is an administrator). */
export async function identityFor(
  deps: ManagementDeps,
  caller: Caller,
  name: string,
  opts: { admin: boolean; field?: string } = { admin: true },
): Promise<Identity> {
  const identity = await deps.identities.get(name);
  if (identity === undefined || (identity.spec.owner !== caller.subject && !(opts.admin && caller.admin)))
    throw identityNotFound(name, opts.field);
  return identity;
}

/**
 * Writes again the index entries of every key of the identity, with its limits as they are now:
 * each gateway replica drops them from its cache at once. The operator, watching identities,
 * writes the same entries; this makes the change hold before the answer.
 */
export async function rewriteKeysOf(deps: ManagementDeps, identity: Identity): Promise<number> {
  const keys = await deps.store.keysOfIdentity(identity.spec.owner, identity.metadata.name);
  for (const key of keys) await deps.index.put(key.spec.hash, await keyGrantOf(deps, key, identity));
  return keys.length;
}

/** The identity's credits now, counted across its keys. */
export async function identityCredits(
  deps: ManagementDeps,
  identity: Identity,
): Promise<CreditsState | undefined> {
  const credits = identity.spec.credits;
  if (credits === undefined) return undefined;
  try {
    return await readCredits(
      deps.redis,
      identityCounterAccount(deps.sealer, identity.metadata.name),
      credits,
    );
  } catch (err) {
    throw redisUnavailable(err);
  }
}

/** The identity as the API shows it; `withKeys`: with how many keys it has (a pass over the keys). */
export async function toIdentityView(
  deps: ManagementDeps,
  identity: Identity,
  withKeys = true,
): Promise<IdentityView> {
  const { owner, ownerName, displayName, limits } = identity.spec;
  const view: IdentityView = { name: identity.metadata.name, owner };
  if (withKeys) {
    const keys = await deps.store.keysOfIdentity(identity.spec.owner, identity.metadata.name);
    view.keys = keys.length;
    const usage = await readKeyUsage(deps.redis, keys.map(apiKeyId));
    view.usage = { requests: 0, refusals: 0, rows: 0 };
    for (const u of usage.values()) {
      view.usage.requests += u.count;
      view.usage.refusals += u.refused;
      view.usage.rows += u.rows;
    }
  }
  if (ownerName !== undefined) view.ownerName = ownerName;
  if (displayName !== undefined) view.displayName = displayName;
  const created = identity.metadata.creationTimestamp;
  if (created !== undefined) view.createdAt = typeof created === 'string' ? created : created.toISOString();
  if (limits !== undefined) view.limits = limits.map((l) => ({ ...l }));
  const credits = await identityCredits(deps, identity);
  if (credits !== undefined) view.credits = credits;
  return view;
}
