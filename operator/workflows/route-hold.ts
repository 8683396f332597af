import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { isApiStatus } from '../../common/kube/custom-objects.js';
import type { WorkflowService } from '../../common/resources/workflow-service.js';
import type { ResourceRef } from '../framework/resource-source.js';

/**
 * The finalizer on every routed workflow Service. A route names its Service's cluster IP, and the
 * API server frees that IP the moment the Service is gone: a team that may create Services could
 * then ask for it (`spec.clusterIP`) and take the calls still routed there. With the finalizer, a
 * deleted Service (and its IP) stays until the operator has removed its route, even when no
 * operator runs at the time.
 */
export const ROUTE_FINALIZER = 'tollgate.dev/route';

export const carriesRouteFinalizer = (svc: WorkflowService): boolean =>
  (svc.metadata.finalizers ?? []).includes(ROUTE_FINALIZER);

/** Puts the finalizer on a Service before it is routed, and takes it off once its route is gone. */
export interface RouteHold {
  /** False when the Service is gone or being deleted: it must not be routed. */
  hold(svc: WorkflowService): Promise<boolean>;
  /** Read fresh: the Service may have left the cache (deleted, or its labels taken off). */
  release(ref: ResourceRef): Promise<void>;
}

/** Standalone mode: a route names a URL the operator was given, no address the cluster hands out. */
export const noRouteHold: RouteHold = {
  hold: () => Promise.resolve(true),
  release: () => Promise.resolve(),
};

/** Conflicting writes retried at once: a Service's metadata changes rarely, never in a loop. */
const ATTEMPTS = 5;

export class KubeRouteHold implements RouteHold {
  private readonly api: CoreV1Api;

  constructor(kc: KubeConfig) {
    this.api = kc.makeApiClient(CoreV1Api);
  }

  async hold(svc: WorkflowService): Promise<boolean> {
    if (svc.metadata.deletionTimestamp) return false;
    if (carriesRouteFinalizer(svc)) return true;
    const ref = { namespace: svc.metadata.namespace ?? 'default', name: svc.metadata.name };
    return this.rewrite(ref, svc, (finalizers) =>
      finalizers.includes(ROUTE_FINALIZER) ? undefined : [...finalizers, ROUTE_FINALIZER],
    );
  }

  async release(ref: ResourceRef): Promise<void> {
    await this.rewrite(ref, undefined, (finalizers) =>
      finalizers.includes(ROUTE_FINALIZER) ? finalizers.filter((f) => f !== ROUTE_FINALIZER) : undefined,
    );
  }

  /**
   * Writes `change(finalizers)` (undefined: nothing to write) as a merge patch carrying the
   * resourceVersion it was read at, so another controller's finalizer written meanwhile is never
   * lost (409, read again). False when the Service is gone or, to add one, being deleted.
   */
  private async rewrite(
    ref: ResourceRef,
    cached: WorkflowService | undefined,
    change: (finalizers: string[]) => string[] | undefined,
  ): Promise<boolean> {
    let svc = cached;
    for (let attempt = 1; ; attempt++) {
      svc ??= await this.read(ref);
      if (svc === undefined) return false;
      const next = change(svc.metadata.finalizers ?? []);
      if (next === undefined) return true;
      const adding = next.length > (svc.metadata.finalizers ?? []).length;
      if (adding && svc.metadata.deletionTimestamp) return false;
      try {
        await this.api.patchNamespacedService(
          {
            ...ref,
            body: { metadata: { finalizers: next, resourceVersion: svc.metadata.resourceVersion } },
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
   * namespace being deleted would wait on it for ever). Resolves with the Services released.
   */
  async releaseAll(): Promise<string[]> {
    const released: string[] = [];
    let next: string | undefined;
    do {
      const page = await this.api.listServiceForAllNamespaces({
        limit: 500,
        ...(next === undefined ? {} : { _continue: next }),
      });
      for (const svc of page.items as WorkflowService[]) {
        if (!carriesRouteFinalizer(svc)) continue;
        const ref = { namespace: svc.metadata.namespace ?? 'default', name: svc.metadata.name };
        await this.release(ref);
        released.push(`${ref.namespace}/${ref.name}`);
      }
      next = page.metadata?._continue || undefined;
    } while (next !== undefined);
    return released;
  }

  private async read(ref: ResourceRef): Promise<WorkflowService | undefined> {
    try {
      return (await this.api.readNamespacedService(ref)) as WorkflowService;
    } catch (e) {
      if (isApiStatus(e, 404)) return undefined;
      throw e;
    }
  }
}
