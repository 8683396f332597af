import { TollgateError } from '../errors.js';
import type { ApiKey } from '../resources/apikey.js';
import { apiKeyId } from '../resources/apikey.js';
import type { Module } from '../resources/grant.js';

/**
 * Where ApiKey resources live: the API server (kube-store.ts) or a manifest directory
 * (dir-store.ts). Every read and delete is scoped to an owner: another owner's key is "not found",
 * so ids never leak. Search, ordering and paging are shared below so both stores answer alike.
 */
export interface ApiKeyStore {
  /** Stores a new key; its creationTimestamp is set by the store. */
  create(key: ApiKey): Promise<ApiKey>;
  list(owner: string, filters?: ApiKeyFilters): Promise<ApiKeyPage>;
  get(owner: string, id: string): Promise<ApiKey | undefined>;
  /**
   * Administrators only: every owner's keys (or one owner's, by `owner`), the search also matching
   * the owner and the owner's name.
   */
  listEvery(filters?: ApiKeyFilters & { owner?: string }): Promise<ApiKeyPage>;
  /**
   * Every live key whose spec.owner is `owner`, however it was made (a key applied with kubectl
   * or by a GitOps tool carries no owner label): for offboarding, which must miss none.
   */
  everyKeyOf(owner: string): Promise<ApiKey[]>;
  /**
   * Every live key not rolled that expires after `afterMs` and at or before `untilMs` (the
   * key.expiring webhook): one pass that reads only such keys whole, however many there are.
   */
  expiringBetween(afterMs: number, untilMs: number): Promise<ApiKey[]>;
  /** How many live keys `owner` has, however they were made. */
  countOf(owner: string): Promise<number>;
  /** Administrators only: a key whoever owns it. */
  find(id: string): Promise<ApiKey | undefined>;
  /**
   * Every live key of `owner` naming the identity: an identity change rewrites their entries. A
   * key of another owner naming it (left from an identity of that name since deleted) is not its.
   */
  keysOfIdentity(owner: string, identity: string): Promise<ApiKey[]>;
  /**
   * Writes a changed key read from this store; a key changed by someone else since it was read
   * (or deleted) is refused with key_changed, never overwritten.
   */
  update(key: ApiKey): Promise<ApiKey>;
  /** Removes the key; false if the owner has no key of that id. */
  delete(owner: string, id: string): Promise<boolean>;
  /** Ends what the store keeps running (a watch). */
  close(): Promise<void>;
}

export interface ApiKeyFilters {
  /** Case-insensitive substring of the name, start, module or any role. */
  search?: string;
  module?: Module;
  /** Page size; DEFAULT_PAGE_SIZE if absent. */
  limit?: number;
  /** From a previous page's `nextCursor`. */
  cursor?: string;
}

export interface ApiKeyPage {
  items: ApiKey[];
  /** Present when more keys follow. */
  nextCursor?: string;
}

export const DEFAULT_PAGE_SIZE = 50;
/** The most live keys one user who is not an administrator may make through the API, unless set. */
export const DEFAULT_MAX_KEYS_PER_OWNER = 20_000;
export const MAX_PAGE_SIZE = 200;

/** Someone else changed or deleted the key between our read and our write. */
export const keyChanged = (id: string): TollgateError =>
  new TollgateError('key_changed', `API key ${id} was changed or deleted meanwhile; read it again and retry`);

/** A cursor that does not decode: the caller sent something no page ever returned. */
const invalidCursor = (): TollgateError =>
  new TollgateError('invalid_cursor', 'cursor is not one this API returned; start again without it', {
    field: 'cursor',
  });

interface Position {
  created: string;
  id: string;
}

/** What listing and searching read of a key: a store may keep only this for every key. */
export interface KeyListing extends Position {
  spec: Pick<ApiKey['spec'], 'name' | 'start' | 'module' | 'roles' | 'owner' | 'ownerName' | 'identity'>;
}

export const listingOf = (key: ApiKey): KeyListing => ({
  created: key.metadata.creationTimestamp ?? '',
  id: apiKeyId(key),
  spec: key.spec,
});

/** Newest first; keys created in the same second are ordered by id so pages never overlap. */
function compare(a: Position, b: Position): number {
  if (a.created !== b.created) return a.created < b.created ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

function encodeCursor(p: Position): string {
  return Buffer.from(JSON.stringify([p.created, p.id])).toString('base64url');
}

function decodeCursor(cursor: string): Position {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      typeof value[1] === 'string'
    ) {
      return { created: value[0], id: value[1] };
    }
  } catch {
    // Reported below like any other cursor that is not ours.
  }
  throw invalidCursor();
}

function matches(listing: KeyListing, needle: string, withOwner: boolean): boolean {
  const { name, start, module, roles, owner, ownerName } = listing.spec;
  const fields = [name ?? '', start, module, ...roles, ...(withOwner ? [owner, ownerName ?? ''] : [])];
  return fields.some((field) => field.toLowerCase().includes(needle));
}

/**
 * One page of `keys` (in any order) under `filters`: all of one owner's keys, or, for an
 * administrator's listing (`withOwner`), anyone's, searched by owner too. One pass that keeps
 * only the page's worth of keys, never a sort of them all (100,000 keys: a few milliseconds).
 */
export function pageOf<T>(
  keys: Iterable<T>,
  listing: (key: T) => KeyListing,
  filters: ApiKeyFilters = {},
  withOwner = false,
): { items: T[]; nextCursor?: string } {
  const limit = Math.min(filters.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
  const after = filters.cursor === undefined ? undefined : decodeCursor(filters.cursor);
  const needle = filters.search?.trim().toLowerCase() ?? '';
  // The first limit + 1 in order, kept sorted: the extra one says whether a next page exists.
  const best: Array<{ key: T; at: KeyListing }> = [];
  for (const key of keys) {
    const at = listing(key);
    if (filters.module !== undefined && at.spec.module !== filters.module) continue;
    if (after !== undefined && compare(at, after) <= 0) continue;
    const worst = best.at(-1);
    if (best.length > limit && worst !== undefined && compare(at, worst.at) >= 0) continue;
    if (needle !== '' && !matches(at, needle, withOwner)) continue;
    let lo = 0;
    let hi = best.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(best[mid]!.at, at) <= 0) lo = mid + 1;
      else hi = mid;
    }
    best.splice(lo, 0, { key, at });
    if (best.length > limit + 1) best.pop();
  }
  const page = best.slice(0, limit);
  const last = page.at(-1);
  const items = page.map((k) => k.key);
  return best.length > limit && last !== undefined ? { items, nextCursor: encodeCursor(last.at) } : { items };
}
