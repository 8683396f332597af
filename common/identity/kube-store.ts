import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { TollgateError } from '../errors.js';
import {
  apiFailureDetail,
  isApiStatus,
  listAllCustomObjects,
  type CustomResourcePlace,
} from '../kube/custom-objects.js';
import {
  IDENTITY_GROUP,
  IDENTITY_PLURAL,
  IDENTITY_VERSION,
  identitySchema,
  type Identity,
} from '../resources/identity.js';
import { identityChanged, identityExists, type IdentityStore } from './store.js';

const parsed = (raw: unknown): Identity | undefined => {
  const r = identitySchema.safeParse(raw);
  return r.success && r.data.metadata.deletionTimestamp === undefined ? r.data : undefined;
};

/** Identity resources in the keys' namespace of the API server. */
export class KubeIdentityStore implements IdentityStore {
  private readonly api: CustomObjectsApi;
  private readonly place: CustomResourcePlace;

  constructor(kc: KubeConfig, namespace: string) {
    this.api = kc.makeApiClient(CustomObjectsApi);
    this.place = { group: IDENTITY_GROUP, version: IDENTITY_VERSION, namespace, plural: IDENTITY_PLURAL };
  }

  async create(identity: Identity): Promise<Identity> {
    try {
      return identitySchema.parse(
        await this.call('create', () =>
          this.api.createNamespacedCustomObject({ ...this.place, body: identity }),
        ),
      );
    } catch (e) {
      if (isApiStatus(e, 409)) throw identityExists(identity.metadata.name);
      throw e;
    }
  }

  async get(name: string): Promise<Identity | undefined> {
    try {
      return parsed(
        await this.call('get', () => this.api.getNamespacedCustomObject({ ...this.place, name })),
      );
    } catch (e) {
      if (isApiStatus(e, 404)) return undefined;
      throw e;
    }
  }

  async list(owner?: string): Promise<Identity[]> {
    const items = await this.call('list', () => listAllCustomObjects(this.api, this.place));
    return items.flatMap((raw) => {
      const identity = parsed(raw);
      return identity !== undefined && (owner === undefined || identity.spec.owner === owner)
        ? [identity]
        : [];
    });
  }

  async update(identity: Identity): Promise<Identity> {
    try {
      // The resourceVersion read with it makes the API server refuse a write over a newer one.
      return identitySchema.parse(
        await this.call('update', () =>
          this.api.replaceNamespacedCustomObject({
            ...this.place,
            name: identity.metadata.name,
            body: identity,
          }),
        ),
      );
    } catch (e) {
      if (isApiStatus(e, 404) || isApiStatus(e, 409)) throw identityChanged(identity.metadata.name);
      throw e;
    }
  }

  async delete(identity: Identity): Promise<boolean> {
    try {
      await this.call('delete', () =>
        this.api.deleteNamespacedCustomObject({
          ...this.place,
          name: identity.metadata.name,
          body: { preconditions: { uid: identity.metadata.uid ?? '' } },
        }),
      );
      return true;
    } catch (e) {
      if (isApiStatus(e, 404)) return false;
      if (isApiStatus(e, 409)) throw identityChanged(identity.metadata.name);
      throw e;
    }
  }

  /** Runs an API call; failures other than 404 and 409 become a 503 that says where to look. */
  private async call<T>(verb: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (isApiStatus(e, 404) || isApiStatus(e, 409)) throw e;
      throw new TollgateError(
        'key_store_unavailable',
        `the Kubernetes API refused to ${verb} Identity resources (${apiFailureDetail(e)}); check the API server, the Identity CRD (crds/identities.yaml) and the gateway's RBAC`,
        { cause: e },
      );
    }
  }
}
