import type { KeyUsage } from '../../common/apikey/usage.js';
import { apiKeyId, stopsAt, type ApiKey } from '../../common/resources/apikey.js';
import type { Module, RateLimit } from '../../common/resources/grant.js';

/** A key as the management API shows it: never the hash, never the key. */
export interface ApiKeyView {
  id: string;
  name?: string;
  start: string;
  module: Module;
  roles: string[];
  createdAt?: string;
  lastUsed?: string;
  requestCount: number;
  expiresAt?: string;
  rateLimit?: RateLimit;
  allowedCidrs?: string[];
  /** The key this one replaced, when it was made by a roll. */
  rolledFrom?: string;
  /** Set once the key was rolled: the key that replaced it and the end of its grace period. */
  rolled?: { to: string; at: string; graceEndsAt: string };
  refusalCount: number;
  /** `rolled` while its grace period runs; `expired` once refused for its expiry or its grace end. */
  state: 'active' | 'rolled' | 'expired';
}

const later = (a: string | undefined, b: string | undefined): string | undefined =>
  a === undefined ? b : b === undefined ? a : Date.parse(a) >= Date.parse(b) ? a : b;

/**
 * Usage comes from Redis (written by the gateway as requests pass) and from the resource's status
 * (synced by the operator, and what survives a Redis flush); the more recent figure wins.
 */
export function toApiKeyView(key: ApiKey, usage: KeyUsage | undefined): ApiKeyView {
  const { name, start, module, roles, expiresAt, rateLimit, allowedCidrs, rolledFrom, rolled } = key.spec;
  const ends = stopsAt(key.spec);
  const view: ApiKeyView = {
    id: apiKeyId(key),
    start,
    module,
    roles: [...roles],
    requestCount: Math.max(usage?.count ?? 0, key.status?.requestCount ?? 0),
    refusalCount: usage?.refused ?? 0,
    state:
      ends !== undefined && Date.parse(ends) <= Date.now()
        ? 'expired'
        : rolled !== undefined
          ? 'rolled'
          : 'active',
  };
  if (name !== undefined) view.name = name;
  if (key.metadata.creationTimestamp !== undefined) view.createdAt = key.metadata.creationTimestamp;
  const lastUsed = later(usage?.lastUsed, key.status?.lastUsed);
  if (lastUsed !== undefined) view.lastUsed = lastUsed;
  if (expiresAt !== undefined) view.expiresAt = expiresAt;
  if (rateLimit !== undefined) view.rateLimit = { ...rateLimit };
  if (allowedCidrs !== undefined) view.allowedCidrs = [...allowedCidrs];
  if (rolledFrom !== undefined) view.rolledFrom = rolledFrom;
  if (rolled !== undefined) view.rolled = { ...rolled };
  return view;
}
