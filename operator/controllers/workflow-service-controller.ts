import type { Logger } from '../../common/logger.js';
import {
  OWNER_KEY,
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
import { parseRefKey, refKey, type ResourceRef, type WatchedSource } from '../framework/resource-source.js';
import type { ReconcileResult, Reconciler, Watches } from '../framework/controller.js';

export const WORKFLOW_SELECTOR = `${WORKFLOW_LABEL},${SERVICE_LABEL}`;

/** Where a workflow Service's traffic goes: the placement decides (cluster DNS, or a local URL). */
export type ServiceAddress = (svc: WorkflowService) => string | undefined;

/** On a cluster: the Service's own DNS name and port (`tollgate.dev/port`, else `http`, else the first). */
export const clusterServiceAddress: ServiceAddress = (svc) => {
  const ports = svc.spec?.ports ?? [];
  const wanted = svc.metadata.annotations?.[PORT_ANNOTATION];
  const port =
    ports.find((p) => p.name === wanted || String(p.port) === wanted) ??
    ports.find((p) => p.name === 'http') ??
    ports[0];
  if (!port) return undefined;
  return `http://${svc.metadata.name}.${svc.metadata.namespace ?? 'default'}.svc:${port.port}`;
};

/** In standalone mode: the `tollgate.dev/url` annotation `tollgate route add` writes. */
export const annotatedServiceAddress: ServiceAddress = (svc) => {
  const url = svc.metadata.annotations?.[URL_ANNOTATION];
  return url !== undefined && routeSchema.shape.url.safeParse(url).success ? url : undefined;
};

/** Where a labelled Service's traffic goes, or undefined if it is not routable. */
export function workflowRoute(
  svc: WorkflowService,
  address: ServiceAddress,
): { key: string; route: Route } | undefined {
  const labels = svc.metadata.labels ?? {};
  const workflow = labels[WORKFLOW_LABEL];
  const service = labels[SERVICE_LABEL];
  // Label values on a cluster already have this shape; a hand-written manifest may not, and an id
  // with ':' or '/' must not reach a Redis key or a path.
  if (!workflow || !service || !WORKFLOW_ID_PATTERN.test(workflow) || !WORKFLOW_ID_PATTERN.test(service))
    return undefined;
  const url = address(svc);
  if (url === undefined) return undefined;
  const owner = labels[OWNER_KEY] ?? svc.metadata.annotations?.[OWNER_KEY];
  const ns = svc.metadata.namespace ?? 'default';
  return {
    key: redisKeys.bdaRoute(workflow, service),
    route: {
      url,
      workflow,
      source: serviceSource({ namespace: ns, name: svc.metadata.name }),
      ...(owner ? { owner } : {}),
      ...(svc.metadata.annotations?.[SIDECAR_ANNOTATION] === 'true'
        ? { grantAudience: grantAudience.service(workflow, service) }
        : {}),
    },
  };
}

export const serviceSource = (ref: ResourceRef) => `service/${ref.namespace}/${ref.name}`;

/** Labelled workflow Services → bda routes. */
export class WorkflowServiceReconciler implements Reconciler {
  readonly name = 'workflow-service';
  /** The route key each Service was last routed under, to drop it when the labels change. */
  private readonly routed = new Map<string, string>();

  readonly watches: Watches<WorkflowService>;

  constructor(
    private readonly services: WatchedSource<WorkflowService>,
    private readonly routes: RouteWriter,
    private readonly address: ServiceAddress,
    private readonly log: Logger,
  ) {
    this.watches = { for: services, onDeleted: (ref, gone) => this.noteDeleted(ref, gone), workers: 4 };
  }

  noteDeleted(ref: ResourceRef, svc: WorkflowService | undefined): void {
    const r = svc && workflowRoute(svc, this.address);
    if (r && !this.routed.has(refKey(ref))) this.routed.set(refKey(ref), r.key);
  }

  /** The route keys this controller currently holds. */
  liveRoutes(): string[] {
    return [...this.routed.values()];
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const ref = parseRefKey(key);
    const svc = this.services.get(ref);
    const target = svc && workflowRoute(svc, this.address);
    const previous = this.routed.get(key);
    if (previous && previous !== target?.key) await this.routes.remove(previous, serviceSource(ref));
    if (!target) {
      if (svc) this.log.warn({ service: key }, 'workflow Service has no valid ids or address to route to');
      this.routed.delete(key);
      return undefined;
    }
    await this.routes.put(target.key, target.route);
    this.routed.set(key, target.key);
    return undefined;
  }
}
