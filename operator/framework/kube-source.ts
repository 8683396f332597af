import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesObject,
  type V1ServiceSpec,
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

/**
 * Deployments and Services of a labelled source larger than this (as JSON, once `managedFields`
 * and kubectl's copy are gone) are kept cut down to what the operator reads of them: anyone who may
 * create them in a namespace may label them as a model's or a workflow's, and make each up to the
 * API server's 1.5 MB. None Tollgate makes comes near it. (Pods are cut down by their parser.)
 */
export const MAX_KEPT_OBJECT_BYTES = 128 * 1024;
/** Objects per list page: at 1.5 MB each, a page stays far below the longest string V8 parses. */
const LABELLED_LIST_PAGE = 100;
/** The labels and annotations kept of an object cut down: Tollgate's own, each short. */
const KEPT_KEY = /^(tollgate\.dev\/|app\.kubernetes\.io\/managed-by$)/;
const KEPT_ENTRIES = 32;
const KEPT_ENTRY_CHARS = 1024;
/** A cut-down Service keeps this many ports, and its selector if it is no larger than this. */
const KEPT_PORTS = 64;
const KEPT_SELECTOR_CHARS = 8 * 1024;

function keptEntries(map: Record<string, string> | undefined): Record<string, string> | undefined {
  if (map === undefined) return undefined;
  const kept = Object.entries(map)
    .filter(([k, v]) => KEPT_KEY.test(k) && k.length + v.length <= KEPT_ENTRY_CHARS)
    .slice(0, KEPT_ENTRIES);
  return Object.fromEntries(kept);
}

/** What the operator reads of a Service's spec: where it is called, and which pods it selects. */
function keptServiceSpec(spec: V1ServiceSpec | undefined): V1ServiceSpec | undefined {
  if (spec === undefined) return undefined;
  const selector = spec.selector;
  return {
    ...(spec.type === undefined ? {} : { type: spec.type }),
    ...(spec.clusterIP === undefined ? {} : { clusterIP: spec.clusterIP }),
    ...(spec.clusterIPs === undefined ? {} : { clusterIPs: spec.clusterIPs.slice(0, 2) }),
    ...(spec.externalName === undefined ? {} : { externalName: spec.externalName.slice(0, 253) }),
    ...(spec.ports === undefined
      ? {}
      : {
          ports: spec.ports.slice(0, KEPT_PORTS).map((p) => ({
            port: p.port,
            ...(p.name === undefined ? {} : { name: p.name }),
            ...(p.targetPort === undefined ? {} : { targetPort: p.targetPort }),
            ...(p.protocol === undefined ? {} : { protocol: p.protocol }),
          })),
        }),
    // One too large to keep selects nothing here: such a Service is not routed.
    ...(selector === undefined || JSON.stringify(selector).length > KEPT_SELECTOR_CHARS ? {} : { selector }),
  };
}

/**
 * `raw`, or, past MAX_KEPT_OBJECT_BYTES, what identifies it and what the operator reads of its
 * kind (a new object: the informer's copy is cut down).
 */
export function bounded(raw: unknown, resource: 'services' | 'deployments'): unknown {
  const obj = raw as KubernetesObject & { spec?: V1ServiceSpec & { replicas?: unknown }; status?: unknown };
  if (JSON.stringify(obj).length <= MAX_KEPT_OBJECT_BYTES) return raw;
  const m = obj.metadata ?? {};
  const labels = keptEntries(m.labels);
  const annotations = keptEntries(m.annotations);
  const spec =
    resource === 'services'
      ? keptServiceSpec(obj.spec)
      : typeof obj.spec?.replicas === 'number'
        ? { replicas: obj.spec.replicas }
        : undefined;
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      generation: m.generation,
      creationTimestamp: m.creationTimestamp,
      ...(m.deletionTimestamp === undefined ? {} : { deletionTimestamp: m.deletionTimestamp }),
      ...(m.finalizers === undefined ? {} : { finalizers: m.finalizers.filter((f) => KEPT_KEY.test(f)) }),
      ...(labels === undefined ? {} : { labels }),
      ...(annotations === undefined ? {} : { annotations }),
    },
    // A Deployment's replicas and its status, which only the cluster's controllers write (not the
    // namespace's team): a model's Deployment whose settings make it large is still seen rolling out.
    ...(spec === undefined ? {} : { spec }),
    ...(obj.status === undefined ? {} : { status: obj.status }),
  };
}

/** Built-in resources matching a label selector (workflow Services; the Deployments and Services of models). */
export class KubeLabelledSource<T extends Resource> extends InformerCache<T> implements WatchedSource<T> {
  /**
   * @param changed whether an update matters to its reconciler (controller-runtime's predicate):
   *   the objects are their teams', who may edit them as often as they like.
   */
  constructor(
    kc: KubeConfig,
    resource: 'services' | 'deployments' | 'pods',
    labelSelector: string,
    parse: Parse<T>,
    log: Logger,
    namespace?: string,
    private readonly changed?: (before: T, after: T) => boolean,
  ) {
    const base = resource === 'deployments' ? '/apis/apps/v1' : '/api/v1';
    const path = namespace ? `${base}/namespaces/${namespace}/${resource}` : `${base}/${resource}`;
    let list: ListPage;
    if (resource === 'services') {
      const api = kc.makeApiClient(CoreV1Api);
      list = (page) =>
        namespace
          ? api.listNamespacedService({ namespace, labelSelector, ...page, limit: LABELLED_LIST_PAGE })
          : api.listServiceForAllNamespaces({ labelSelector, ...page, limit: LABELLED_LIST_PAGE });
    } else if (resource === 'pods') {
      const api = kc.makeApiClient(CoreV1Api);
      list = (page) =>
        namespace
          ? api.listNamespacedPod({ namespace, labelSelector, ...page, limit: LABELLED_LIST_PAGE })
          : api.listPodForAllNamespaces({ labelSelector, ...page, limit: LABELLED_LIST_PAGE });
    } else {
      const api = kc.makeApiClient(AppsV1Api);
      list = (page) =>
        namespace
          ? api.listNamespacedDeployment({ namespace, labelSelector, ...page, limit: LABELLED_LIST_PAGE })
          : api.listDeploymentForAllNamespaces({ labelSelector, ...page, limit: LABELLED_LIST_PAGE });
    }
    super(
      kc,
      path,
      list,
      resource === 'pods' ? parse : (raw) => parse(bounded(raw, resource)),
      log,
      labelSelector,
    );
  }

  override start(
    onChange: (ref: ResourceRef, deleted: T | undefined) => void,
    opts: Parameters<InformerCache<T>['start']>[1] = {},
  ): Promise<void> {
    return super.start(onChange, {
      ...(this.changed === undefined ? {} : { changed: this.changed }),
      ...opts,
    });
  }
}
