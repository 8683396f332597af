import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { z } from 'zod';
import {
  isApiStatus,
  listAllCustomObjects,
  storeCall,
  type CustomResourcePlace,
} from '../kube/custom-objects.js';
import type { ResourceKind, ResourceStore, StoredResource } from './resource-store.js';

/** Custom resources of one kind in one namespace of the API server. */
export class KubeResourceStore<T extends StoredResource> implements ResourceStore<T> {
  private readonly api: CustomObjectsApi;

  constructor(
    kc: KubeConfig,
    private readonly place: CustomResourcePlace,
    private readonly schema: z.ZodType<T>,
    private readonly kind: ResourceKind,
  ) {
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  private parsed(raw: unknown): T | undefined {
    const r = this.schema.safeParse(raw);
    return r.success && r.data.metadata.deletionTimestamp === undefined ? r.data : undefined;
  }

  async create(obj: T): Promise<T> {
    try {
      return this.schema.parse(
        await this.call('create', () => this.api.createNamespacedCustomObject({ ...this.place, body: obj })),
      );
    } catch (e) {
      if (isApiStatus(e, 409)) throw this.kind.exists(obj.metadata.name);
      throw e;
    }
  }

  async get(name: string): Promise<T | undefined> {
    try {
      return this.parsed(
        await this.call('get', () => this.api.getNamespacedCustomObject({ ...this.place, name })),
      );
    } catch (e) {
      if (isApiStatus(e, 404)) return undefined;
      throw e;
    }
  }

  async list(): Promise<T[]> {
    const items = await this.call('list', () => listAllCustomObjects(this.api, this.place));
    return items.flatMap((raw) => {
      const obj = this.parsed(raw);
      return obj === undefined ? [] : [obj];
    });
  }

  async update(obj: T): Promise<T> {
    try {
      // The resourceVersion read with it makes the API server refuse a write over a newer one.
      return this.schema.parse(
        await this.call('update', () =>
          this.api.replaceNamespacedCustomObject({ ...this.place, name: obj.metadata.name, body: obj }),
        ),
      );
    } catch (e) {
      if (isApiStatus(e, 404) || isApiStatus(e, 409)) throw this.kind.changed(obj.metadata.name);
      throw e;
    }
  }

  async delete(obj: T): Promise<boolean> {
    try {
      await this.call('delete', () =>
        this.api.deleteNamespacedCustomObject({
          ...this.place,
          name: obj.metadata.name,
          body: { preconditions: { uid: obj.metadata.uid ?? '' } },
        }),
      );
      return true;
    } catch (e) {
      if (isApiStatus(e, 404)) return false;
      if (isApiStatus(e, 409)) throw this.kind.changed(obj.metadata.name);
      throw e;
    }
  }

  /** Runs an API call; failures other than 404 and 409 become a 503 that says where to look. */
  private call<R>(verb: string, fn: () => Promise<R>): Promise<R> {
    const { kind, crdFile } = this.kind;
    return storeCall(
      `${verb} ${kind} resources`,
      `the API server, the ${kind} CRD (${crdFile}) and the gateway's RBAC`,
      fn,
    );
  }
}
