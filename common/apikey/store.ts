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
  /** Administrators only: a key whoever owns it. */
  find(id: string): Promise<ApiKey | undefined>;
  /**
   * Writes a changed key read from this store; a key changed by someone else since it was read
   * (or deleted) is refused with key_changed, never overwritten.
   */
  update(key: ApiKey): Promise<ApiKey>;
  /** Removes the key; false if the owner has no key of that id. */
  delete(owner: string, id: string): Promise<boolean>;
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

const createdOf = (key: ApiKey): string => key.metadata.creationTimestamp ?? '';

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

function matches(key: ApiKey, search: string, withOwner: boolean): boolean {
  const { name, start, module, roles, owner, ownerName } = key.spec;
  const needle = search.toLowerCase();
  const fields = [name ?? '', start, module, ...roles, ...(withOwner ? [owner, ownerName ?? ''] : [])];
  return fields.some((field) => field.toLowerCase().includes(needle));
}

/**
 * One page of `keys` (in any order) under `filters`: all of one owner's keys, or, for an
 * administrator's listing (`withOwner`), anyone's, searched by owner too.
 */
export function pageOf(keys: readonly ApiKey[], filters: ApiKeyFilters = {}, withOwner = false): ApiKeyPage {
  const limit = Math.min(filters.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
  const after = filters.cursor === undefined ? undefined : decodeCursor(filters.cursor);
  const search = filters.search?.trim();
  const selected = keys
    .filter((k) => filters.module === undefined || k.spec.module === filters.module)
    .filter((k) => search === undefined || search === '' || matches(k, search, withOwner))
    .map((key) => ({ key, position: { created: createdOf(key), id: apiKeyId(key) } }))
    .filter((k) => after === undefined || compare(k.position, after) > 0)
    .sort((a, b) => compare(a.position, b.position));
  const page = selected.slice(0, limit);
  const last = page.at(-1);
  const items = page.map((k) => k.key);
  return selected.length > limit && last !== undefined
    ? { items, nextCursor: encodeCursor(last.position) }
    : { items };
}
