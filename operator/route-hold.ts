import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { LRUCache } from 'lru-cache';
import { isApiStatus } from '../common/kube/custom-objects.js';
import type { ResourceRef } from './framework/resource-source.js';

/**
 * The finalizer on every Service a route names: routed workflow Services and the Services of
 * Models. A route names its Service's cluster IP, and the API server frees that IP the moment the
 * Service is gone: a team that may create Services could then ask for it (`spec.clusterIP`) and
 * take the calls still routed there. With the finalizer, a deleted Service (and its IP) stays until
 * the operator has removed its route, even when no operator runs at the time.
 */
export const ROUTE_FINALIZER = 'tollgate.dev/route';

/** What the hold reads of a Service (a workflow Service, a Model's, or one listed). */
export interface HeldService {
  metadata?: {
    name?: string;
    namespace?: string;
    finalizers?: string[];
    deletionTimestamp?: string | Date;
    resourceVersion?: string;
    labels?: Record<string, string>;
  };
}

export const carriesRouteFinalizer = (svc: HeldService): boolean =>
  (svc.metadata?.finalizers ?? []).includes(ROUTE_FINALIZER);

const refOf = (svc: HeldService): ResourceRef => ({
  namespace: svc.metadata?.namespace ?? 'default',
  name: svc.metadata?.name ?? '',
});

/** Puts the finalizer on a Service before it is routed, and takes it off once its route is gone. */
export interface RouteHold {
  /** False when the Service is gone or being deleted: it must not be routed. */
  hold(svc: HeldService): Promise<boolean>;
  /** Read fresh: the Service may have left the cache (deleted, or its labels taken off). */
  release(ref: ResourceRef): Promise<void>;
  /**
   * Services carrying the finalizer that `seen` does not hold: unlabelled while no operator ran,
   * the operator never hears of them again (their routes are swept; the finalizer must go too).
   */
  strays(seen: (svc: HeldService, ref: ResourceRef) => boolean): Promise<ResourceRef[]>;
}

/** Standalone mode: a route names a URL the operator was given, no address the cluster hands out. */
export const noRouteHold: RouteHold = {
  hold: () => Promise.resolve(true),
  release: () => Promise.resolve(),
  strays: () => Promise.resolve([]),
};

/** Conflicting writes retried at once: a Service's metadata changes rarely, never in a loop. */
const ATTEMPTS = 5;

export class KubeRouteHold implements RouteHold {
  private readonly api: CoreV1Api;
  /**
   * Released by this process lately: the informer's copy may still show the finalizer, so it is
   * read afresh (a minute is far longer than the cache lags; deleted Services are forgotten).
   */
  private readonly released = new LRUCache<string, true>({ max: 10_000, ttl: 60_000 });

  /** @param namespace the one namespace the operator watches, if it watches one */
  constructor(
    kc: KubeConfig,
    private readonly namespace?: string,
  ) {
    this.api = kc.makeApiClient(CoreV1Api);
  }

  async strays(seen: (svc: HeldService, ref: ResourceRef) => boolean): Promise<ResourceRef[]> {
    const found: ResourceRef[] = [];
    await this.eachHeld(this.namespace, (svc) => {
      if (!seen(svc, refOf(svc))) found.push(refOf(svc));
      return Promise.resolve();
    });
    return found;
  }

  async hold(svc: HeldService): Promise<boolean> {
    if (svc.metadata?.deletionTimestamp) return false;
    const ref = refOf(svc);
    const key = `${ref.namespace}/${ref.name}`;
    const stale = this.released.has(key);
    if (carriesRouteFinalizer(svc) && !stale) return true;
    const held = await this.rewrite(ref, stale ? undefined : svc, (finalizers) =>
      finalizers.includes(ROUTE_FINALIZER) ? undefined : [...finalizers, ROUTE_FINALIZER],
    );
    if (held) this.released.delete(key);
    return held;
  }

  async release(ref: ResourceRef): Promise<void> {
    await this.rewrite(ref, undefined, (finalizers) =>
      finalizers.includes(ROUTE_FINALIZER) ? finalizers.filter((f) => f !== ROUTE_FINALIZER) : undefined,
    );
    this.released.set(`${ref.namespace}/${ref.name}`, true);
  }

  /**
   * Writes `change(finalizers)` (undefined: nothing to write) as a merge patch carrying the
   * resourceVersion it was read at, so another controller's finalizer written meanwhile is never
   * lost (409, read again). False when the Service is gone or, to add one, being deleted.
   */
  private async rewrite(
    ref: ResourceRef,
    cached: HeldService | undefined,
    change: (finalizers: string[]) => string[] | undefined,
  ): Promise<boolean> {
    let svc = cached;
    for (let attempt = 1; ; attempt++) {
      svc ??= await this.read(ref);
      if (svc === undefined) return false;
      const next = change(svc.metadata?.finalizers ?? []);
      if (next === undefined) return true;
      const adding = next.length > (svc.metadata?.finalizers ?? []).length;
      if (adding && svc.metadata?.deletionTimestamp) return false;
      try {
        await this.api.patchNamespacedService(
          {
            ...ref,
            body: { metadata: { finalizers: next, resourceVersion: svc.metadata?.resourceVersion } },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        return true;
      } catch (e) {
        if (isApiStatus(e, 404)) return false;
        // A stale copy (409), or a finalizer refused on an object being deleted (422): read again.
        if (!(isApiStatus(e, 409) || (adding && isApiStatus(e, 422))) || attempt >= ATTEMPTS) throw e;
        svc = undefined;
      }
    }
  }

  /**
   * Takes the finalizer off every Service of the cluster that carries it, labelled or not: what the
   * chart runs once the operator is uninstalled, since none would ever take it off again (and a
   * namespace being deleted would wait on it for ever). One Service that fails does not stop the
   * others. Resolves with the Services released and those that failed, with why.
   */
  async releaseAll(namespace?: string): Promise<{ released: string[]; failed: string[] }> {
    const released: string[] = [];
    const failed: string[] = [];
    await this.eachHeld(namespace, async (svc) => {
      const ref = refOf(svc);
      try {
        await this.release(ref);
        released.push(`${ref.namespace}/${ref.name}`);
      } catch (e) {
        failed.push(`${ref.namespace}/${ref.name}: ${e instanceof Error ? e.message : String(e)}`);
      }
    });
    return { released, failed };
  }

  /** Every Service carrying the finalizer, in `namespace` or all, page by page. */
  private async eachHeld(
    namespace: string | undefined,
    visit: (svc: HeldService) => Promise<void>,
  ): Promise<void> {
    let next: string | undefined;
    do {
      const page = { limit: 500, ...(next === undefined ? {} : { _continue: next }) };
      const list =
        namespace === undefined
          ? await this.api.listServiceForAllNamespaces(page)
          : await this.api.listNamespacedService({ namespace, ...page });
      for (const svc of list.items) if (carriesRouteFinalizer(svc)) await visit(svc);
      next = list.metadata?._continue || undefined;
    } while (next !== undefined);
  }

  private async read(ref: ResourceRef): Promise<HeldService | undefined> {
    try {
      return await this.api.readNamespacedService(ref);
    } catch (e) {
      if (isApiStatus(e, 404)) return undefined;
      throw e;
    }
  }
}
