import { ApiException, type CustomObjectsApi } from '@kubernetes/client-node';
import { TollgateError } from '../errors.js';

/** Where a kind of custom resource lives: its API group, version, plural and namespace. */
export interface CustomResourcePlace {
  group: string;
  version: string;
  namespace: string;
  plural: string;
}

/** Pages asked of the API server at a time: a large namespace is read in chunks, not one answer. */
const LIST_CHUNK = 500;

/** Every object of a custom resource in one namespace (optionally narrowed by label), page by page. */
export async function listAllCustomObjects(
  api: CustomObjectsApi,
  place: CustomResourcePlace,
  labelSelector?: string,
): Promise<unknown[]> {
  const items: unknown[] = [];
  let next: string | undefined;
  do {
    const continueToken = next;
    const answer = (await api.listNamespacedCustomObject({
      ...place,
      limit: LIST_CHUNK,
      ...(labelSelector === undefined ? {} : { labelSelector }),
      ...(continueToken === undefined ? {} : { _continue: continueToken }),
    })) as { items?: unknown[]; metadata?: { continue?: string } };
    items.push(...(answer.items ?? []));
    next = answer.metadata?.continue || undefined;
  } while (next !== undefined);
  return items;
}

/** True if the API server answered with this HTTP status. */
export const isApiStatus = (e: unknown, code: number): boolean =>
  e instanceof ApiException && e.code === code;

/** A failed API call in a few words, for a message that says where to look. */
export function apiFailureDetail(e: unknown): string {
  if (!(e instanceof ApiException)) return e instanceof Error ? e.message : String(e);
  // The API server's Status says why (a CRD validation rule's message, a quota): keep it.
  const body: unknown = e.body;
  let message: unknown;
  try {
    message = (typeof body === 'string' ? (JSON.parse(body) as { message?: unknown }) : undefined)?.message;
  } catch {
    message = undefined;
  }
  return typeof message === 'string' ? `HTTP ${e.code}: ${message}` : `HTTP ${e.code}`;
}

/**
 * Runs a store's API server call. A 404 or a 409 passes through, for the store to read as "not
 * found" or "changed"; any other failure becomes a 503 saying what was refused (`what`: "list
 * ApiKey resources") and what to `check`.
 */
export async function storeCall<T>(what: string, check: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isApiStatus(e, 404) || isApiStatus(e, 409)) throw e;
    throw new TollgateError(
      'key_store_unavailable',
      `the Kubernetes API refused to ${what} (${apiFailureDetail(e)}); check ${check}`,
      { cause: e },
    );
  }
}
