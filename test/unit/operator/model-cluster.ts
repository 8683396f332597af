/** The API server and the cluster as a Model reconciler sees them, for unit tests. */
import type { Model } from '../../../common/resources/model.js';
import {
  refKey,
  type ResourceRef,
  type ResourceSource,
} from '../../../operator/framework/resource-source.js';
import type {
  HeldAddress,
  RuntimeDriver,
  RuntimePlan,
  RuntimeState,
} from '../../../operator/serving/runtime-driver.js';
import { Held } from './held-source.js';

/** The Models as the API server keeps them: finalizers and status written back, nothing checked. */
export class HeldModels extends Held<Model> implements ResourceSource<Model> {
  read(ref: ResourceRef): Promise<Model | undefined> {
    return Promise.resolve(this.get(ref));
  }
  updateStatus(obj: Model): Promise<Model> {
    this.items.set(refKey(refOf(obj)), obj);
    return Promise.resolve(obj);
  }
  updateFinalizers(obj: Model, finalizers: string[]): Promise<Model> {
    const next = { ...obj, metadata: { ...obj.metadata, finalizers } };
    // A deleted object whose last finalizer comes off is gone.
    if (next.metadata.deletionTimestamp && finalizers.length === 0) this.delete(refOf(obj));
    else this.items.set(refKey(refOf(obj)), next);
    return Promise.resolve(next);
  }
}

export const refOf = (m: Model): ResourceRef => ({
  namespace: m.metadata.namespace ?? 'default',
  name: m.metadata.name,
});

/**
 * Each workload's Service as a cluster holds it: a cluster IP kept, once deleted, until released
 * (what kube-runtime.ts does with the route finalizer). Every change is journalled.
 */
export class Cluster implements RuntimeDriver {
  readonly services = new Map<
    string,
    { ip: string; deleting: boolean; model: ResourceRef; labels: Record<string, string> }
  >();
  private next = 10;
  /** Hands out IPv6 addresses (a single-stack IPv6 cluster) when set. */
  ipv6 = false;
  constructor(private readonly journal: string[]) {}

  apply(plan: RuntimePlan): Promise<RuntimeState> {
    const model = refOf(plan.model);
    const key = refKey({ namespace: model.namespace, name: plan.workload });
    let svc = this.services.get(key);
    if (svc === undefined) {
      const n = this.next++;
      svc = { ip: this.ipv6 ? `fd00:10:96::${n}` : `10.96.0.${n}`, deleting: false, model, labels: {} };
      this.services.set(key, svc);
    }
    return Promise.resolve({
      replicas: 1,
      readyReplicas: 1,
      url: `http://${plan.workload}.${model.namespace}.svc:8080`,
      routeUrl: svc.deleting ? '' : `http://${svc.ip.includes(':') ? `[${svc.ip}]` : svc.ip}:8080`,
      rollingOut: false,
    });
  }
  remove(ref: ResourceRef, model: string): Promise<void> {
    const svc = this.services.get(refKey(ref));
    if (svc && svc.model.name === model) svc.deleting = true;
    return Promise.resolve();
  }
  /** `kubectl delete service`, by the namespace's team. */
  deleteService(ref: ResourceRef): void {
    const svc = this.services.get(refKey(ref));
    if (svc) svc.deleting = true;
  }
  held(model: ResourceRef): HeldAddress[] {
    return [...this.services]
      .filter(([, s]) => s.deleting && refKey(s.model) === refKey(model))
      .map(([key, s]) => ({
        ref: { namespace: model.namespace, name: key.slice(model.namespace.length + 1) },
        addresses: [s.ip],
        labels: s.labels,
      }));
  }
  release(ref: ResourceRef): Promise<void> {
    const svc = this.services.get(refKey(ref));
    if (svc) this.journal.push(`release ${svc.ip}`);
    this.services.delete(refKey(ref));
    return Promise.resolve();
  }
  workloads(model: ResourceRef): string[] {
    return [...this.services]
      .filter(([, s]) => refKey(s.model) === refKey(model))
      .map(([key]) => key.slice(model.namespace.length + 1));
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
}
