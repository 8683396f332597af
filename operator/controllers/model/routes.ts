import type { Logger } from '../../../common/logger.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { modelRouteSource } from '../../../common/resources/grant.js';
import { SERVICE_LABEL } from '../../../common/resources/labels.js';
import { MODEL_API_VERSION, MODEL_KIND, type Model } from '../../../common/resources/model.js';
import type { RouteWriter } from '../../../common/routes/workflow-routes.js';
import type { EventRecorder } from '../../events.js';
import { refKey, type ResourceRef } from '../../framework/resource-source.js';
import type { RuntimeDriver } from '../../serving/runtime-driver.js';
import type { WorkflowAdmission } from '../../workflows/workflow-admission.js';
import { serviceSource } from '../workflow-service-controller.js';
import { routeOf, routingOf } from './route-of.js';
import type { VersionResult } from './status.js';

export interface RouteOptions {
  routes: Pick<RouteWriter, 'put' | 'remove' | 'removeAllOf'>;
  runtime: Pick<RuntimeDriver, 'held' | 'release'>;
  /** Whether a Model's namespace may serve its spec.workflow, and the workflow's owner. */
  workflows: WorkflowAdmission;
  events: EventRecorder;
  log: Logger;
}

const routeSource = (ref: ResourceRef) => modelRouteSource(ref.namespace, ref.name);

/**
 * The routes part of the Model reconciler: the model's route (and its workflow's, where the
 * Workflow record admits it) while a version can answer, and the runtime addresses let go once no
 * route names them.
 */
export class ModelRoutes {
  /**
   * Each Model's workflow, the route keys it holds and the addresses they name: drops the old bda
   * route when the workflow changes, tells the sweep what is live, and keeps those addresses held.
   */
  private readonly routed = new Map<
    string,
    { workflow: string | undefined; keys: string[]; urls: string[] }
  >();
  /** Models whose every workflow route this process knows (releaseUnrouted). */
  private readonly swept = new Set<string>();
  /** Why each Model's workflow route was refused, last told (told again only when it changes). */
  private readonly workflowRefusals = new Map<string, string>();

  constructor(private readonly opts: RouteOptions) {}

  /**
   * The model's route while any version has a ready replica (or waits at zero). `replacing`: a
   * workload of this Model outside the spec still runs (its route is kept while nothing of the
   * spec serves). Resolves with whether a version of the spec is routed.
   */
  async sync(model: Model, results: VersionResult[], replacing: boolean): Promise<boolean> {
    const ref = { namespace: model.metadata.namespace ?? 'default', name: model.metadata.name };
    const key = refKey(ref);
    const workflow = model.spec.workflow;
    const previous = this.routed.get(key)?.workflow;
    if (previous !== undefined && previous !== workflow) {
      await this.opts.routes.remove(redisKeys.bdaRoute(previous, ref.name), routeSource(ref));
    }
    const routing = routingOf(model, results);
    const { main } = routing;
    if (main === undefined) {
      // Nothing of the spec serves yet, but a replaced workload does: its route stays until then.
      if (replacing && this.routed.get(key)?.keys.length) return false;
      await this.remove(ref, workflow);
      return false;
    }
    // The workflow's route only where its Workflow record admits the Model's namespace, with the
    // record's owner: a tenant's Model cannot join another team's workflow by naming it.
    const owner = workflow ? await this.workflowOwner(model, workflow) : undefined;
    if (workflow && owner === undefined)
      await this.opts.routes.remove(redisKeys.bdaRoute(workflow, ref.name), routeSource(ref));
    const admitted = workflow && owner !== undefined ? { workflow, owner } : undefined;
    const route = routeOf(model, { ...routing, main }, admitted);
    const keys = [
      redisKeys.modelRoute(ref.name),
      ...(admitted === undefined ? [] : [redisKeys.bdaRoute(admitted.workflow, ref.name)]),
    ];
    for (const k of keys) await this.opts.routes.put(k, route);
    const urls = [route.url, ...(route.versions ?? []).map((v) => v.url), route.shadow?.url ?? ''];
    this.routed.set(key, { workflow, keys, urls });
    return true;
  }

  /** Its routes: the model's own, and under `workflow` and the workflow it was last routed under. */
  async remove(ref: ResourceRef, workflow: string | undefined): Promise<void> {
    const key = refKey(ref);
    const before = this.routed.get(key)?.workflow;
    await this.opts.routes.remove(redisKeys.modelRoute(ref.name), routeSource(ref));
    for (const w of new Set([workflow, before]))
      if (w) await this.opts.routes.remove(redisKeys.bdaRoute(w, ref.name), routeSource(ref));
    this.routed.set(key, { workflow, keys: [], urls: [] });
  }

  /**
   * Lets go of the addresses of the Model's workloads being deleted that no Model's route names.
   * The first time in this process, every workflow route the Model's source wrote and does not
   * hold now goes before: an earlier process may have written one this one never heard of (its
   * spec.workflow changed while no operator ran). A Service also labelled as a workflow service
   * (relabelled by its team) has that source's routes removed too, whichever controller runs first.
   */
  async releaseUnrouted(ref: ResourceRef): Promise<void> {
    const held = this.opts.runtime.held(ref);
    if (held.length === 0) return;
    const routed = new Set([...this.routed.values()].flatMap((r) => r.urls.map(hostOf)));
    const due = held.filter((h) => !h.addresses.some((a) => routed.has(a)));
    if (due.length === 0) return;
    const key = refKey(ref);
    if (!this.swept.has(key)) {
      await this.opts.routes.removeAllOf(routeSource(ref), new Set(this.routed.get(key)?.keys));
      this.swept.add(key);
    }
    for (const workload of due) {
      if (workload.labels[SERVICE_LABEL] !== undefined)
        await this.opts.routes.removeAllOf(serviceSource(workload.ref));
      await this.opts.runtime.release(workload.ref);
    }
  }

  /** The route keys this part currently holds. */
  live(): string[] {
    return [...this.routed.values()].flatMap((r) => r.keys);
  }

  /** A Model refused for its name: nothing of it is routed, and nothing is remembered as routed. */
  dropped(key: string): void {
    this.routed.delete(key);
  }

  forget(key: string): void {
    this.routed.delete(key);
    this.swept.delete(key);
  }

  /** The owner of the Model's workflow if its record admits the Model's namespace; else it is told why. */
  private async workflowOwner(model: Model, workflow: string): Promise<string | undefined> {
    const ref = { namespace: model.metadata.namespace ?? 'default', name: model.metadata.name };
    const admission = this.opts.workflows.admit(workflow, ref.namespace);
    if (admission.admitted) {
      this.workflowRefusals.delete(refKey(ref));
      return admission.owner;
    }
    if (this.workflowRefusals.get(refKey(ref)) !== admission.message) {
      this.workflowRefusals.set(refKey(ref), admission.message);
      this.opts.log.warn({ model: refKey(ref), reason: admission.reason }, admission.message);
      await this.opts.events.record(
        { ...model, apiVersion: MODEL_API_VERSION, kind: MODEL_KIND },
        'Warning',
        admission.reason,
        `not routed under workflow '${workflow}': ${admission.message}`,
      );
    }
    return undefined;
  }
}

/** The host of a routed URL, as a Service's clusterIP spells it (no IPv6 brackets). */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  } catch {
    return '';
  }
}
