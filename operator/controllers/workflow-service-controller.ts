import { clusterIpOrigin } from '../../common/kube/cluster-ip.js';
import type { Logger } from '../../common/logger.js';
import {
  PORT_ANNOTATION,
  SERVICE_LABEL,
  SIDECAR_ANNOTATION,
  URL_ANNOTATION,
  WORKFLOW_LABEL,
} from '../../common/resources/labels.js';
import { redisKeys } from '../../common/redis/schema.js';
import { grantAudience, routeSchema, type Route } from '../../common/resources/grant.js';
import { WORKFLOW_ID_PATTERN, type WorkflowService } from '../../common/resources/workflow-service.js';
import type { RouteWriter } from '../../common/routes/workflow-routes.js';
import {
  parseRefKey,
  refKey,
  sourceKey,
  type ResourceRef,
  type WatchedSource,
} from '../framework/resource-source.js';
import type { EventRecorder } from '../events.js';
import { creationOrder } from '../../common/resources/claim-order.js';
import { isModelName } from '../../common/resources/model-name.js';
import type { WorkflowAdmission } from '../workflows/workflow-admission.js';
import { carriesRouteFinalizer, type RouteHold } from '../route-hold.js';
import { isModelWorkload } from '../serving/model-workload.js';
import type { ReconcileResult, Reconciler, Watches } from '../framework/controller.js';

export const WORKFLOW_SELECTOR = `${WORKFLOW_LABEL},${SERVICE_LABEL}`;

/**
 * Where a workflow Service's traffic goes: the placement decides (its cluster IP, or a local URL).
 * `missing` tells the Service's owner, in its Events, what to give it when it has none.
 */
export type ServiceAddress = ((svc: WorkflowService) => string | undefined) & { missing: string };

/**
 * On a cluster: the Service's cluster IP and port (`tollgate.dev/port`, else `http`, else the
 * first). Only Services that select pods route: not an ExternalName one, nor a headless one, nor
 * one without a selector (common/kube/cluster-ip.ts).
 */
export const clusterServiceAddress: ServiceAddress = Object.assign(
  (svc: WorkflowService) => {
    const ports = svc.spec?.ports ?? [];
    const wanted = svc.metadata.annotations?.[PORT_ANNOTATION];
    const port =
      ports.find((p) => p.name === wanted || String(p.port) === wanted) ??
      ports.find((p) => p.name === 'http') ??
      ports[0];
    if (!port) return undefined;
    return clusterIpOrigin(svc.spec, port.port);
  },
  {
    missing:
      'this Service has no port, no selector, or no cluster IP (an ExternalName or a headless Service): the gateway calls a Service at its cluster IP, never by name, and only one that selects its pods; give it a selector, a port and a cluster IP',
  },
);

/** In standalone mode: the `tollgate.dev/url` annotation `tollgate route add` writes. */
export const annotatedServiceAddress: ServiceAddress = Object.assign(
  (svc: WorkflowService) => {
    const url = svc.metadata.annotations?.[URL_ANNOTATION];
    return url !== undefined && routeSchema.shape.url.safeParse(url).success ? url : undefined;
  },
  {
    missing: `this service has no valid http(s) URL in its ${URL_ANNOTATION} annotation; add it with tollgate route add`,
  },
);

/** What a labelled Service claims: a workflow service's route key and where its traffic would go. */
export interface ServiceClaim {
  key: string;
  workflow: string;
  service: string;
  url: string;
}

/** The route a Service claims, or undefined if its labels or address make it unroutable. */
export function serviceClaim(svc: WorkflowService, address: ServiceAddress): ServiceClaim | undefined {
  // A Model's Service is routed as that Model, and its route finalizer is the Model's to take off.
  if (isModelWorkload(svc)) return undefined;
  const ids = claimedIds(svc);
  // A Model's workflow route is kept under its own name: a Service claiming one would overwrite it.
  if (ids !== undefined && isModelName(ids.service)) return undefined;
  const url = ids && address(svc);
  if (ids === undefined || url === undefined) return undefined;
  return { key: redisKeys.bdaRoute(ids.workflow, ids.service), ...ids, url };
}

/** The workflow and service ids a Service's labels ask for, when both are valid ids. */
function claimedIds(svc: WorkflowService): { workflow: string; service: string } | undefined {
  const labels = svc.metadata.labels ?? {};
  const workflow = labels[WORKFLOW_LABEL];
  const service = labels[SERVICE_LABEL];
  // Label values on a cluster already have this shape; a hand-written manifest may not, and an id
  // with ':' or '/' must not reach a Redis key or a path.
  if (!workflow || !service || !WORKFLOW_ID_PATTERN.test(workflow) || !WORKFLOW_ID_PATTERN.test(service))
    return undefined;
  return { workflow, service };
}

/** The route an admitted Service is given: its owner is the Workflow record's, never a label's. */
export function workflowRoute(svc: WorkflowService, claim: ServiceClaim, owner: string): Route {
  return {
    url: claim.url,
    workflow: claim.workflow,
    source: serviceSource({ namespace: svc.metadata.namespace ?? 'default', name: svc.metadata.name }),
    owner,
    ...(svc.metadata.annotations?.[SIDECAR_ANNOTATION] === 'true'
      ? {
          grantAudience: grantAudience.service(
            svc.metadata.namespace ?? 'default',
            claim.workflow,
            claim.service,
          ),
        }
      : {}),
  };
}

const MODEL_SERVICE_REFUSED =
  'this Service serves a Model (labels app.kubernetes.io/managed-by=tollgate and tollgate.dev/model) and is routed as that Model; label a Service of your own with tollgate.dev/workflow and tollgate.dev/service';

export const serviceSource = (ref: ResourceRef) => `service/${ref.namespace}/${ref.name}`;

const refOf = (svc: WorkflowService): ResourceRef => ({
  namespace: svc.metadata.namespace ?? 'default',
  name: svc.metadata.name,
});

/**
 * Labelled workflow Services → bda routes, admitted by the Workflow records. A Service's labels
 * only ask: its workflow's record must allow its namespace, and of the Services that claim one
 * workflow service the oldest holds the route (the Gateway API's conflict rule). A refused
 * Service is told why, on an Event and a log line, once per reason. A routed Service carries the
 * route finalizer, taken off only once no route names its cluster IP (operator/route-hold.ts).
 */
export class WorkflowServiceReconciler implements Reconciler {
  readonly name = 'workflow-service';
  /** The route key each Service asks for, recorded once the key it asked for before is settled. */
  private readonly claims = new Map<string, string>();
  /**
   * Services this process has reconciled: their routes are the ones `claims` says. Another may have
   * routes an earlier process wrote under keys its labels no longer name (relabelled while no
   * operator ran): before its finalizer comes off, every route of its source is looked for.
   */
  private readonly known = new Set<string>();
  /** The route key a Service deleted from the cache last asked for (its labels then). */
  private readonly gone = new Map<string, string>();
  /** The Service (`namespace/name`) holding each route key this controller wrote. */
  private readonly holders = new Map<string, string>();
  /** Why each refused Service was refused, last told: told again only when it changes. */
  private readonly told = new Map<string, string>();
  /** Services that left the cache still carrying the route finalizer: it is taken off next. */
  private readonly releasing = new Set<string>();

  readonly watches: Watches<WorkflowService>;

  constructor(
    private readonly deps: {
      services: WatchedSource<WorkflowService>;
      workflows: WorkflowAdmission;
      routes: Pick<RouteWriter, 'put' | 'remove' | 'removeAllOf' | 'sourceAt'>;
      hold: RouteHold;
      address: ServiceAddress;
      events: EventRecorder;
      log: Logger;
    },
  ) {
    this.watches = {
      for: deps.services,
      onDeleted: (ref, gone) => this.noteDeleted(ref, gone),
      owns: [deps.workflows.watch((id) => this.servicesOf(id))],
      workers: 1,
    };
  }

  noteDeleted(ref: ResourceRef, svc: WorkflowService | undefined): void {
    const claim = svc && serviceClaim(svc, this.deps.address);
    if (claim) this.gone.set(refKey(ref), claim.key);
    if (svc && carriesRouteFinalizer(svc) && !isModelWorkload(svc)) this.releasing.add(refKey(ref));
  }

  /** The route keys this controller currently holds. */
  liveRoutes(): string[] {
    return [...this.holders.keys()];
  }

  keyOf(source: string): string | undefined {
    return sourceKey('service', source);
  }

  /**
   * After a rebuild's sweep: a Service carrying the finalizer that the informer does not show (its
   * labels taken off while no operator ran) has its routes removed, then its finalizer. One that
   * fails is left to the next rebuild, logged; it holds no other.
   */
  async sweepStale(): Promise<number> {
    let strays: ResourceRef[];
    try {
      // A Model's Services are the Model reconciler's to release.
      strays = await this.deps.hold.strays(
        (svc, r) => this.deps.services.get(r) !== undefined || isModelWorkload(svc),
      );
    } catch (err) {
      this.deps.log.warn({ err }, 'could not list the Services carrying the route finalizer');
      return 0;
    }
    let released = 0;
    for (const ref of strays) {
      try {
        await this.deps.routes.removeAllOf(serviceSource(ref));
        await this.deps.hold.release(ref);
        released++;
      } catch (err) {
        this.deps.log.warn({ err, service: refKey(ref) }, 'could not release an unlabelled Service');
      }
    }
    return released;
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const svc = this.deps.services.get(parseRefKey(key));
    // What its labels and address ask for. One being deleted still asks (its route is taken back
    // by the settling, also after a restart), but is given nothing.
    const asked = svc && serviceClaim(svc, this.deps.address);
    const claim = svc?.metadata.deletionTimestamp ? undefined : asked;
    const previous = this.claims.get(key) ?? this.gone.get(key);
    if (svc && !asked) {
      const ids = claimedIds(svc);
      if (isModelWorkload(svc)) await this.refuse(svc, 'ModelService', MODEL_SERVICE_REFUSED);
      else if (ids !== undefined && isModelName(ids.service))
        await this.refuse(
          svc,
          'ServiceIdReserved',
          `workflow service '${ids.service}' is named as a Model is (model-<id>), and a Model published under workflow '${ids.workflow}' is routed by its name; label this Service with a tollgate.dev/service that does not start with 'model-'`,
        );
      else if (ids !== undefined) await this.refuse(svc, 'NoAddress', this.deps.address.missing);
      else this.deps.log.warn({ service: key }, 'workflow Service has no valid ids to route by');
    }
    if (!svc) this.told.delete(key);
    // The route this Service asked for before, then the one it asks for: both may change hands.
    // What it asks is recorded only once the earlier one is settled, so a failed settle is retried.
    const released = new Set<string>();
    if (previous !== undefined && previous !== asked?.key)
      for (const r of await this.settle(previous)) released.add(r);
    if (claim) this.claims.set(key, claim.key);
    else this.claims.delete(key);
    this.gone.delete(key);
    if (asked) for (const r of await this.settle(asked.key)) released.add(r);
    // Its address is let go only now that no route of its own names it.
    const unrouted = svc
      ? claim === undefined && carriesRouteFinalizer(svc) && !isModelWorkload(svc)
      : this.releasing.has(key);
    if (unrouted && !released.has(key)) await this.release(parseRefKey(key));
    this.releasing.delete(key);
    if (svc) this.known.add(key);
    else this.known.delete(key);
    return undefined;
  }

  /** Takes the finalizer off a Service once no route of its own is left. */
  private async release(ref: ResourceRef): Promise<void> {
    const key = refKey(ref);
    if (!this.known.has(key)) {
      await this.deps.routes.removeAllOf(serviceSource(ref));
      this.known.add(key);
    }
    await this.deps.hold.release(ref);
  }

  /**
   * Gives a route key to the Service that holds it while it still claims it and is admitted, else
   * to the oldest admitted Service claiming it, or removes it if none is; then takes the route
   * finalizer off the other claimants. Resolves with the Services released.
   *
   * The holder goes first because a claim is made with labels, which a team may put on any
   * Service of its own at any time: by age alone, an old Service relabelled today would take a
   * route another team's Service has served for months. The route in Redis names its holder for
   * a process that has not written it (after a restart).
   */
  private async settle(routeKey: string): Promise<Set<string>> {
    const holding =
      this.holders.get(routeKey) ?? sourceKey('service', (await this.deps.routes.sourceAt(routeKey)) ?? '');
    const first = (svc: WorkflowService): number => (refKey(refOf(svc)) === holding ? 0 : 1);
    const claimants = this.deps.services
      .list()
      .map((svc) => ({ svc, claim: serviceClaim(svc, this.deps.address) }))
      .filter((c): c is { svc: WorkflowService; claim: ServiceClaim } => c.claim?.key === routeKey)
      .sort((a, b) => first(a.svc) - first(b.svc) || creationOrder(a.svc, b.svc));
    let holder: { svc: WorkflowService; claim: ServiceClaim; owner: string } | undefined;
    for (const { svc, claim } of claimants) {
      // Leaving: its route is taken back below, before its finalizer.
      if (svc.metadata.deletionTimestamp) continue;
      const admission = this.deps.workflows.admit(claim.workflow, refOf(svc).namespace);
      if (!admission.admitted) {
        await this.refuse(svc, admission.reason, admission.message);
      } else if (holder !== undefined) {
        // Named only to its own namespace: another team's Service is not this one's to know.
        const by =
          refOf(holder.svc).namespace === refOf(svc).namespace
            ? `Service ${refKey(refOf(holder.svc))}`
            : 'a Service in another namespace';
        await this.refuse(
          svc,
          'RouteClaimedByOlderService',
          `${by} claimed workflow '${claim.workflow}' service '${claim.service}' first and keeps its route while it claims it; label this Service with another tollgate.dev/service`,
        );
      } else if (await this.deps.hold.hold(svc)) {
        // Held before it is routed: deleted from now on, its address stays until the route goes.
        holder = { svc, claim, owner: admission.owner };
      }
    }
    const before = this.holders.get(routeKey);
    if (holder === undefined) {
      // Whoever held it: the last holder, or (after a restart, when this process never wrote it) a
      // claimant refused now. A route another controller wrote under the key is not ours to drop.
      const sources = new Set(claimants.map((c) => serviceSource(refOf(c.svc))));
      if (before !== undefined) sources.add(serviceSource(parseRefKey(before)));
      for (const source of sources) await this.deps.routes.remove(routeKey, source);
      this.holders.delete(routeKey);
    } else {
      await this.deps.routes.put(routeKey, workflowRoute(holder.svc, holder.claim, holder.owner));
      const key = refKey(refOf(holder.svc));
      this.holders.set(routeKey, key);
      if (this.told.delete(key)) {
        await this.tell(
          holder.svc,
          'Normal',
          'Routed',
          `routed as workflow '${holder.claim.workflow}' service '${holder.claim.service}'`,
        );
      }
    }
    const released = new Set<string>();
    for (const { svc } of claimants) {
      if (svc === holder?.svc || !carriesRouteFinalizer(svc)) continue;
      const key = refKey(refOf(svc));
      // One whose earlier route is still to be settled (its labels changed) is released by its
      // own reconcile, after that.
      if (this.known.has(key) && this.claims.get(key) !== routeKey) continue;
      await this.release(refOf(svc));
      released.add(key);
    }
    return released;
  }

  private async refuse(svc: WorkflowService, reason: string, message: string): Promise<void> {
    const key = refKey(refOf(svc));
    if (this.told.get(key) === message) return;
    this.told.set(key, message);
    this.deps.log.warn({ service: key, reason }, message);
    await this.tell(svc, 'Warning', reason, message);
  }

  private tell(
    svc: WorkflowService,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): Promise<void> {
    return this.deps.events.record(
      { apiVersion: 'v1', kind: 'Service', metadata: { ...svc.metadata, namespace: refOf(svc).namespace } },
      type,
      reason,
      message,
    );
  }

  /** The Services labelled with a workflow id, to settle again when its record changes. */
  private servicesOf(id: string): ResourceRef[] {
    return this.deps.services
      .list()
      .filter((svc) => svc.metadata.labels?.[WORKFLOW_LABEL] === id)
      .map(refOf);
  }
}
