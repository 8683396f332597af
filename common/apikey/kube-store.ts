import { createHash } from 'node:crypto';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { TollgateError } from '../errors.js';
import {
  apiFailureDetail,
  isApiStatus,
  listAllCustomObjects,
  storeCall,
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
import { InformerCache } from '../kube/informer-cache.js';
import type { Logger } from '../logger.js';
import {
  keyChanged,
  pageOf,
  type ApiKeyFilters,
  type ApiKeyPage,
  type ApiKeyStore,
  type KeyListing,
} from './store.js';

function* filter<T>(items: Iterable<T>, keep: (t: T) => boolean): Generator<T> {
  for (const t of items) if (keep(t)) yield t;
}

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

/**
 * What the store keeps of each key for listing and search: its listing fields and the key itself
 * as JSON (about 1 KB; a parsed object costs several), parsed again only for the page answered.
 */
interface Listed {
  listing: KeyListing;
  live: boolean;
  json: string;
  /** When it expires (epoch ms), if it does and was not rolled: the key.expiring webhook's. */
  expiresAtMs?: number;
}

function toListed(raw: unknown): Listed | undefined {
  // The CRD's schema already holds every stored object to the contract; one written by hand
  // under another name pattern is not a key this API manages, and is left out.
  const parsed = apiKeySchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const key = parsed.data;
  const { name, start, module, roles, owner, ownerName, identity } = key.spec;
  const spec: KeyListing['spec'] = { start, module, roles, owner };
  if (name !== undefined) spec.name = name;
  if (identity !== undefined) spec.identity = identity;
  if (ownerName !== undefined) spec.ownerName = ownerName;
  // What a listed key's view reads (views.ts): its name, creation time, spec and status.
  const { name: resourceName, namespace, creationTimestamp, resourceVersion } = key.metadata;
  const metadata = { name: resourceName, namespace, creationTimestamp, resourceVersion };
  const listed: Listed = {
    listing: { created: creationTimestamp ?? '', id: apiKeyId(key), spec },
    live: live(key),
    json: JSON.stringify({ ...key, metadata }),
  };
  if (key.spec.expiresAt !== undefined && key.spec.rolled === undefined)
    listed.expiresAtMs = Date.parse(key.spec.expiresAt);
  return listed;
}

const fromListed = (l: Listed): ApiKey => apiKeySchema.parse(JSON.parse(l.json));

export class KubeApiKeyStore implements ApiKeyStore {
  private readonly api: CustomObjectsApi;
  private readonly resource: CustomResourcePlace;
  /**
   * Every key of the namespace, kept by a watch: a listing or a search reads memory, not the API
   * server (100,000 keys: one page in milliseconds, where listing them all took seconds). A key
   * written here is in it before the write is answered; one written elsewhere, once the watch says.
   */
  private readonly listed: InformerCache<Listed>;
  private synced: Promise<void> | undefined;

  constructor(kc: KubeConfig, namespace: string, log: Logger) {
    this.api = kc.makeApiClient(CustomObjectsApi);
    this.resource = { group: API_KEY_GROUP, version: API_KEY_VERSION, namespace, plural: API_KEY_PLURAL };
    const place = this.resource;
    this.listed = new InformerCache<Listed>(
      kc,
      `/apis/${API_KEY_GROUP}/${API_KEY_VERSION}/namespaces/${namespace}/${API_KEY_PLURAL}`,
      (page) => this.api.listNamespacedCustomObject({ ...place, ...page }),
      toListed,
      log,
    );
  }

  /**
   * Starts the watch now rather than at the first listing, so the first user asks a warm copy
   * (100,000 keys take the API server tens of seconds to list). A failure is logged; the first
   * listing tries again.
   */
  warm(log: Logger): void {
    this.every().catch((err: unknown) =>
      log.warn({ err }, 'the ApiKey watch did not start; tried again when keys are listed'),
    );
  }

  /** Stops the watch (the process's end, or a test's). */
  async close(): Promise<void> {
    await this.listed.stop();
  }

  /** The watched keys, once the first list is in (started by the first listing asked for). */
  private async every(): Promise<Iterable<Listed>> {
    this.synced ??= this.listed
      .start(() => undefined, { failFast: true })
      .catch((cause: unknown) => {
        this.synced = undefined;
        throw new TollgateError(
          'key_store_unavailable',
          `the Kubernetes API refused to list ApiKey resources (${apiFailureDetail(cause)}); check the API server and the gateway's RBAC`,
          { cause },
        );
      });
    await this.synced;
    return this.listed.values();
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
    const created = apiKeySchema.parse(
      await this.call('create', () => this.api.createNamespacedCustomObject({ ...this.resource, body })),
    );
    this.listed.remember(created);
    return created;
  }

  async list(owner: string, filters?: ApiKeyFilters): Promise<ApiKeyPage> {
    const owned = filter(await this.every(), (l) => l.live && l.listing.spec.owner === owner);
    const page = pageOf(owned, (l) => l.listing, filters);
    return { ...page, items: page.items.map(fromListed) };
  }

  async get(owner: string, id: string): Promise<ApiKey | undefined> {
    const found = await this.read(id);
    return found?.spec.owner === owner ? found : undefined;
  }

  async listEvery(filters: ApiKeyFilters & { owner?: string } = {}): Promise<ApiKeyPage> {
    const { owner } = filters;
    const chosen = filter(
      await this.every(),
      (l) => l.live && (owner === undefined || l.listing.spec.owner === owner),
    );
    const page = pageOf(chosen, (l) => l.listing, filters, true);
    return { ...page, items: page.items.map(fromListed) };
  }

  async expiringBetween(afterMs: number, untilMs: number): Promise<ApiKey[]> {
    const due = filter(
      await this.every(),
      (l) => l.live && l.expiresAtMs !== undefined && l.expiresAtMs > afterMs && l.expiresAtMs <= untilMs,
    );
    return [...due].map(fromListed);
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

  async countOf(owner: string): Promise<number> {
    let n = 0;
    for (const l of await this.every()) if (l.live && l.listing.spec.owner === owner) n++;
    return n;
  }

  async keysOfIdentity(owner: string, identity: string): Promise<ApiKey[]> {
    const theirs = filter(
      await this.every(),
      (l) => l.live && l.listing.spec.identity === identity && l.listing.spec.owner === owner,
    );
    return [...theirs].map(fromListed);
  }

  async update(key: ApiKey): Promise<ApiKey> {
    try {
      // The resourceVersion read with the key makes the API server refuse a write over a newer one.
      const updated = apiKeySchema.parse(
        await this.call('update', () =>
          this.api.replaceNamespacedCustomObject({ ...this.resource, name: key.metadata.name, body: key }),
        ),
      );
      this.listed.remember(updated);
      return updated;
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
      this.listed.forget({ namespace: this.resource.namespace, name: apiKeyName(id) });
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
  private call<T>(verb: string, fn: () => Promise<T>): Promise<T> {
    return storeCall(`${verb} ApiKey resources`, "the API server and the gateway's RBAC", fn);
  }
}
