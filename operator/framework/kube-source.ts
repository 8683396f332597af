import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
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

export type Parse<T> = (raw: unknown) => T | undefined;

const RESTART_DELAY_MS = 1000;
/** Objects per list request: a cold start of 100,000 ApiKeys is read a page at a time. */
const LIST_PAGE = 500;
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * What the cache keeps of an object: all but its `managedFields` and kubectl's last-applied copy,
 * which no reconcile reads and which are most of a small object's size (an ApiKey's cache entry
 * shrinks by more than half). In place: the informer caches the very object it hands out.
 */
function slim(obj: KubernetesObject): KubernetesObject {
  const meta = obj.metadata as (KubernetesObject['metadata'] & { managedFields?: unknown }) | undefined;
  if (meta === undefined) return obj;
  delete meta.managedFields;
  if (meta.annotations?.[LAST_APPLIED] !== undefined) {
    const { [LAST_APPLIED]: _dropped, ...rest } = meta.annotations;
    meta.annotations = rest;
  }
  return obj;
}

type ListPage = (page: { limit: number; _continue?: string }) => Promise<unknown>;

/** Every object, listed a page at a time and slimmed page by page: never one huge response. */
async function listInPages(list: ListPage): Promise<KubernetesListObject<KubernetesObject>> {
  const items: KubernetesObject[] = [];
  let next: string | undefined;
  let last: KubernetesListObject<KubernetesObject>;
  do {
    last = (await list({
      limit: LIST_PAGE,
      ...(next ? { _continue: next } : {}),
    })) as KubernetesListObject<KubernetesObject>;
    for (const item of last.items) items.push(slim(item));
    // `_continue` from the typed clients, `continue` in a custom resource list's raw JSON.
    const meta = last.metadata as { _continue?: string; continue?: string } | undefined;
    next = meta?._continue || meta?.continue || undefined;
  } while (next !== undefined);
  return { ...last, items };
}

/**
 * An informer-backed cache. The client's informer stops on a watch error (e.g. the API server
 * restarting); this restarts it, relisting, so no change is missed.
 */
class InformerCache<T extends Resource> implements WatchedSource<T> {
  private informer: (Informer<KubernetesObject> & ObjectCache<KubernetesObject>) | undefined;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly kc: KubeConfig,
    private readonly path: string,
    private readonly listFn: () => Promise<KubernetesListObject<KubernetesObject>>,
    protected readonly parse: Parse<T>,
    private readonly log: Logger,
    private readonly labelSelector?: string,
  ) {}

  async start(onChange: (ref: ResourceRef, deleted: T | undefined) => void): Promise<void> {
    const informer = makeInformer(this.kc, this.path, this.listFn, this.labelSelector);
    this.informer = informer;
    const emit = (obj: KubernetesObject) => {
      slim(obj);
      onChange({ namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' }, undefined);
    };
    informer.on('add', emit);
    informer.on('update', emit);
    informer.on('delete', (obj) =>
      onChange({ namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' }, this.parse(obj)),
    );
    informer.on('error', (err) => {
      if (this.stopped) return;
      this.log.warn({ err, path: this.path }, 'watch failed; relisting');
      this.restartTimer = setTimeout(() => {
        if (!this.stopped)
          informer.start().catch((e: unknown) => this.log.warn({ err: e, path: this.path }, 'relist failed'));
      }, RESTART_DELAY_MS);
    });
    await informer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    await this.informer?.stop();
  }

  get(ref: ResourceRef): T | undefined {
    const obj = this.informer?.get(ref.name, ref.namespace);
    return obj === undefined ? undefined : this.parse(obj);
  }

  list(): T[] {
    return (this.informer?.list() ?? []).flatMap((o) => {
      const t = this.parse(o);
      return t === undefined ? [] : [t];
    });
  }
}

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
    const listFn = () =>
      listInPages((page) =>
        namespace
          ? api.listNamespacedCustomObject({ group, version, plural, namespace, ...page })
          : api.listClusterCustomObject({ group, version, plural, ...page }),
      );
    super(kc, path, listFn, parse, log);
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
    const body = { ...obj, metadata: { ...obj.metadata, finalizers } };
    return this.write(ref, () => this.api.replaceNamespacedCustomObject({ ...this.kind, ...ref, body }));
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
export class KubeLabelledSource<T extends Resource> extends InformerCache<T> {
  constructor(
    kc: KubeConfig,
    resource: 'services' | 'deployments',
    labelSelector: string,
    parse: Parse<T>,
    log: Logger,
    namespace?: string,
  ) {
    const base = resource === 'services' ? '/api/v1' : '/apis/apps/v1';
    const path = namespace ? `${base}/namespaces/${namespace}/${resource}` : `${base}/${resource}`;
    let list: ListPage;
    if (resource === 'services') {
      const api = kc.makeApiClient(CoreV1Api);
      list = (page) =>
        namespace
          ? api.listNamespacedService({ namespace, labelSelector, ...page })
          : api.listServiceForAllNamespaces({ labelSelector, ...page });
    } else {
      const api = kc.makeApiClient(AppsV1Api);
      list = (page) =>
        namespace
          ? api.listNamespacedDeployment({ namespace, labelSelector, ...page })
          : api.listDeploymentForAllNamespaces({ labelSelector, ...page });
    }
    super(kc, path, () => listInPages(list), parse, log, labelSelector);
  }
}
