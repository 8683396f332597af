import { createHash } from 'node:crypto';
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { TollgateError } from '../errors.js';
import {
  apiFailureDetail,
  isApiStatus,
  listAllCustomObjects,
  type CustomResourcePlace,
} from '../kube/custom-objects.js';
import {
  API_KEY_FINALIZER,
  API_KEY_GROUP,
  API_KEY_PLURAL,
  API_KEY_VERSION,
  apiKeyId,
  apiKeyName,
  apiKeySchema,
  type ApiKey,
} from '../resources/apikey.js';
import { keyChanged, pageOf, type ApiKeyFilters, type ApiKeyPage, type ApiKeyStore } from './store.js';

/**
 * ApiKey resources in one namespace of the API server. Owners are subjects of any shape (emails,
 * URLs), which label values cannot hold, so each key is labelled with a digest of its owner and the
 * list is narrowed by label on the server, then checked against `spec.owner` here.
 */
export const OWNER_LABEL = 'tollgate.dev/owner-hash';

/** A key being deleted (its finalizer not yet taken off by the operator) is gone for this API. */
const live = (key: ApiKey): boolean => key.metadata.deletionTimestamp === undefined;
export const ownerLabelValue = (owner: string): string =>
  createHash('sha256').update(owner).digest('hex').slice(0, 40);

export class KubeApiKeyStore implements ApiKeyStore {
  private readonly resource: CustomResourcePlace;

  constructor(
    private readonly api: CustomObjectsApi,
    namespace: string,
  ) {
    this.resource = { group: API_KEY_GROUP, version: API_KEY_VERSION, namespace, plural: API_KEY_PLURAL };
  }

  async create(key: ApiKey): Promise<ApiKey> {
    const body: ApiKey = {
      ...key,
      metadata: {
        ...key.metadata,
        labels: { ...key.metadata.labels, [OWNER_LABEL]: ownerLabelValue(key.spec.owner) },
        // Under the operator's finalizer from the start (its entry is written now, by the caller):
        // a cold start need not patch every key it finds, one API write each.
        finalizers: [API_KEY_FINALIZER],
      },
    };
    return apiKeySchema.parse(
      await this.call('create', () => this.api.createNamespacedCustomObject({ ...this.resource, body })),
    );
  }

  async list(owner: string, filters?: ApiKeyFilters): Promise<ApiKeyPage> {
    const items = await this.call('list', () =>
      listAllCustomObjects(this.api, this.resource, `${OWNER_LABEL}=${ownerLabelValue(owner)}`),
    );
    const keys: ApiKey[] = [];
    for (const item of items) {
      // The CRD's schema already holds every stored object to the contract; one written by hand
      // under another name pattern is not a key this API manages, and is left out.
      const parsed = apiKeySchema.safeParse(item);
      if (parsed.success && live(parsed.data) && parsed.data.spec.owner === owner) keys.push(parsed.data);
    }
    return pageOf(keys, filters);
  }

  async get(owner: string, id: string): Promise<ApiKey | undefined> {
    const found = await this.read(id);
    return found?.spec.owner === owner ? found : undefined;
  }

  async listEvery(filters: ApiKeyFilters & { owner?: string } = {}): Promise<ApiKeyPage> {
    const { owner } = filters;
    const selector = owner === undefined ? undefined : `${OWNER_LABEL}=${ownerLabelValue(owner)}`;
    const items = await this.call('list', () => listAllCustomObjects(this.api, this.resource, selector));
    const keys: ApiKey[] = [];
    for (const item of items) {
      const parsed = apiKeySchema.safeParse(item);
      if (parsed.success && live(parsed.data) && (owner === undefined || parsed.data.spec.owner === owner))
        keys.push(parsed.data);
    }
    return pageOf(keys, filters, true);
  }

  async everyKeyOf(owner: string): Promise<ApiKey[]> {
    // No label selector: the owner label is the API's own; a key made another way has none.
    const items = await this.call('list', () => listAllCustomObjects(this.api, this.resource, undefined));
    return items.flatMap((item) => {
      const parsed = apiKeySchema.safeParse(item);
      return parsed.success && live(parsed.data) && parsed.data.spec.owner === owner ? [parsed.data] : [];
    });
  }

  find(id: string): Promise<ApiKey | undefined> {
    return this.read(id);
  }

  async update(key: ApiKey): Promise<ApiKey> {
    try {
      // The resourceVersion read with the key makes the API server refuse a write over a newer one.
      return apiKeySchema.parse(
        await this.call('update', () =>
          this.api.replaceNamespacedCustomObject({ ...this.resource, name: key.metadata.name, body: key }),
        ),
      );
    } catch (e) {
      if (isApiStatus(e, 404) || isApiStatus(e, 409)) throw keyChanged(apiKeyId(key));
      throw e;
    }
  }

  async delete(owner: string, id: string): Promise<boolean> {
    const found = await this.get(owner, id);
    if (found === undefined) return false;
    try {
      await this.call('delete', () =>
        this.api.deleteNamespacedCustomObject({
          ...this.resource,
          name: apiKeyName(id),
          // Deletes exactly the object read above, never one re-created under the same name since.
          body: { preconditions: { uid: found.metadata.uid ?? '' } },
        }),
      );
      return true;
    } catch (e) {
      if (isApiStatus(e, 404)) return false;
      throw e;
    }
  }

  private async read(id: string): Promise<ApiKey | undefined> {
    try {
      const object: unknown = await this.call('get', () =>
        this.api.getNamespacedCustomObject({ ...this.resource, name: apiKeyName(id) }),
      );
      const parsed = apiKeySchema.safeParse(object);
      return parsed.success && live(parsed.data) ? parsed.data : undefined;
    } catch (e) {
      if (isApiStatus(e, 404)) return undefined;
      throw e;
    }
  }

  /** Runs an API call; failures other than "not found" become a 503 the caller can report. */
  private async call<T>(verb: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (isApiStatus(e, 404) || isApiStatus(e, 409)) throw e;
      throw new TollgateError(
        'key_store_unavailable',
        `the Kubernetes API refused to ${verb} ApiKey resources (${apiFailureDetail(e)}); check the API server and the gateway's RBAC`,
        { cause: e },
      );
    }
  }
}
