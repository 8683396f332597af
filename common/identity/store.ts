import { TollgateError } from '../errors.js';
import type { Identity } from '../resources/identity.js';

/**
 * Where Identity resources live: the API server (kube-store.ts) or the standalone manifest
 * directory (dir-store.ts). Identities are few (one per customer or team), so both list them
 * whole; owner checks are the caller's (gateway/api/identity-access.ts).
 */
export interface IdentityStore {
  /** Stores a new identity; identity_exists when the name is taken (by anyone). */
  create(identity: Identity): Promise<Identity>;
  get(name: string): Promise<Identity | undefined>;
  /** Every identity, or one owner's. */
  list(owner?: string): Promise<Identity[]>;
  /** Writes a changed identity read from this store; identity_changed if it changed meanwhile. */
  update(identity: Identity): Promise<Identity>;
  /** Removes exactly the identity read (its uid or resourceVersion); false if it is gone. */
  delete(identity: Identity): Promise<boolean>;
}

export const identityExists = (name: string): TollgateError =>
  new TollgateError('identity_exists', `an identity named "${name}" exists already; choose another name`, {
    field: 'name',
  });

export const identityChanged = (name: string): TollgateError =>
  new TollgateError(
    'identity_changed',
    `identity "${name}" was changed or deleted meanwhile; read it again and retry`,
  );
