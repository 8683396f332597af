import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { InformerCache, type ListPage, type Parse } from '../../common/kube/informer-cache.js';
import { isApiStatus } from '../../common/kube/custom-objects.js';
import type { Logger } from '../../common/logger.js';
import {
  ConflictError,
  GoneError,
  type Resource,
  type ResourceRef,
  type ResourceSource,
  type WatchedSource,
} from './resource-source.js';

export interface CustomResourceKind {
  group: string;
  version: string;
  plural: string;
}

/** A custom resource kind on the API server, in one namespace or all. */
export class KubeCustomResourceSource<T extends Resource>
  extends InformerCache<T>
  implements ResourceSource<T>
{
  private readonly api: CustomObjectsApi;

  constructor(
    kc: KubeConfig,
    private readonly kind: CustomResourceKind,
    parse: Parse<T>,
    log: Logger,
    namespace?: string,
  ) {
    const api = kc.makeApiClient(CustomObjectsApi);
    const { group, version, plural } = kind;
    const path = namespace
      ? `/apis/${group}/${version}/namespaces/${namespace}/${plural}`
      : `/apis/${group}/${version}/${plural}`;
    const listPage: ListPage = (page) =>
      namespace
        ? api.listNamespacedCustomObject({ group, version, plural, namespace, ...page })
        : api.listClusterCustomObject({ group, version, plural, ...page });
    super(kc, path, listPage, parse, log);
    this.api = api;
  }

  async read(ref: ResourceRef): Promise<T | undefined> {
    try {
      return this.parseOrThrow(await this.api.getNamespacedCustomObject({ ...this.kind, ...ref }));
    } catch (e) {
      if (isApiStatus(e, 404)) return undefined;
      throw e;
    }
  }

  async updateStatus(obj: T): Promise<T> {
    const ref = { namespace: obj.metadata.namespace ?? '', name: obj.metadata.name };
    return this.write(ref, () =>
      this.api.replaceNamespacedCustomObjectStatus({ ...this.kind, ...ref, body: obj }),
    );
  }

  async updateFinalizers(obj: T, finalizers: string[]): Promise<T> {
    const ref = { namespace: obj.metadata.namespace ?? '', name: obj.metadata.name };
    // A merge patch of the finalizers alone, so a cached copy cut down to what reconciles read never
    // overwrites the rest; the resourceVersion in it makes the API server refuse a stale write (409).
    const body = { metadata: { finalizers, resourceVersion: obj.metadata.resourceVersion } };
    return this.write(ref, () =>
      this.api.patchNamespacedCustomObject(
        { ...this.kind, ...ref, body },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
  }

  private async write(ref: ResourceRef, call: () => Promise<unknown>): Promise<T> {
    try {
      return this.parseOrThrow(await call());
    } catch (e) {
      const what = `${this.kind.plural}/${ref.namespace}/${ref.name}`;
      if (isApiStatus(e, 409)) throw new ConflictError(what);
      if (isApiStatus(e, 404)) throw new GoneError(what);
      throw e;
    }
  }

  private parseOrThrow(raw: unknown): T {
    const t = this.parse(raw);
    if (t === undefined)
      throw new Error(`the API server returned a ${this.kind.plural} object that does not match its schema`);
    return t;
  }
}

/** Built-in resources matching a label selector (workflow Services; the Deployments and Services of models). */
export class KubeLabelledSource<T extends Resource> extends InformerCache<T> implements WatchedSource<T> {
  constructor(
    kc: KubeConfig,
    resource: 'services' | 'deployments' | 'pods',
    labelSelector: string,
    parse: Parse<T>,
    log: Logger,
    namespace?: string,
  ) {
    const base = resource === 'deployments' ? '/apis/apps/v1' : '/api/v1';
    const path = namespace ? `${base}/namespaces/${namespace}/${resource}` : `${base}/${resource}`;
    let list: ListPage;
    if (resource === 'services') {
      const api = kc.makeApiClient(CoreV1Api);
      list = (page) =>
        namespace
          ? api.listNamespacedService({ namespace, labelSelector, ...page })
          : api.listServiceForAllNamespaces({ labelSelector, ...page });
    } else if (resource === 'pods') {
      const api = kc.makeApiClient(CoreV1Api);
      list = (page) =>
        namespace
          ? api.listNamespacedPod({ namespace, labelSelector, ...page })
          : api.listPodForAllNamespaces({ labelSelector, ...page });
    } else {
      const api = kc.makeApiClient(AppsV1Api);
      list = (page) =>
        namespace
          ? api.listNamespacedDeployment({ namespace, labelSelector, ...page })
          : api.listDeploymentForAllNamespaces({ labelSelector, ...page });
    }
    super(kc, path, list, parse, log, labelSelector);
  }
}
