import type { Metered } from '../usage-export/meter.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { TollgateError, type ErrorCode } from '../../common/errors.js';
import { enforce, type Admission, type RowCharge } from '../admission/admission.js';
import { usageEndpoint } from './usage-endpoint.js';
import { WORKFLOW_ID_PATTERN } from '../../common/resources/workflow-service.js';
import type { KeyGrant, Module } from '../../common/resources/grant.js';
import type { NormalisedPath } from './normalise.js';
import { V2_ENDPOINTS } from '../v2/endpoints/index.js';
import { endpointText, matchV2, type V2Match } from '../v2/paths.js';
import { methodNotAllowed } from '../v2/http.js';
import { resolveRoute, type ResolvedRoute, type RouteTable, type RuntimeAddress } from './route-table.js';

/**
 * Decides where an authenticated `/events/...` call goes, or why it may not:
 *
 *   /events/bda/<bda-id>/<service-id>/<path>      key module bda, role == bda-id, any method
 *   /events/platform/api/v1/<resource>[/...]      key module platform, GET/PUT/POST as roles allow
 *
 * The path is parsed into a typed target, which the admission core (admission/admission.ts)
 * judges against the key before the route table is asked, and against the route after, so a key
 * learns nothing about workflows it has no access to.
 */
export type RouteKind = Module;

/** A platform resource served inside the gateway (`models`), instead of proxied. */
export type PlatformResourceHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  ctx: { grant: KeyGrant; requestId: string; resource: string; path: NormalisedPath },
) => void | Promise<void>;

export type EventsTarget = (
  | {
      kind: RouteKind;
      proxy: { origin: string; path: string };
      /** The service answers through a sidecar: the audience to sign the grant for (auth/signed-grant.ts). */
      grantAudience?: string;
    }
  | { kind: 'platform'; builtIn: PlatformResourceHandler; resource: string }
  /**
   * V2 inference on a model published as the workflow's service
   * (`POST /events/bda/<wf>/<model>/v2/models/<model>/infer`): checked as /v2 checks it, by the
   * same Inference service, from the runtime the workflow route names.
   */
  | {
      kind: 'bda';
      inference: {
        model: string;
        workflow: string;
        routed: RuntimeAddress;
        /** Priced per row: spent once the batch is checked (gateway/v2/inference.ts), not before. */
        perRow?: RowCharge;
      };
    }
) & {
  /** Credits the call spends (the price the gateway's creditCosts setting gives it); absent: 1. */
  cost?: number;
  /** What its usage is exported under: the model, the workflow's service, the platform resource. */
  metered: Metered;
};

const notFound = (code: ErrorCode, message: string): TollgateError => new TollgateError(code, message);

export class EventsRouter {
  private readonly upstreams: ReadonlyMap<string, ResolvedRoute>;

  constructor(
    private readonly routes: RouteTable,
    /** Who may call what, and at what price. */
    private readonly admission: Admission,
    upstreams: Readonly<Record<string, string>>,
    private readonly builtIn: ReadonlyMap<string, PlatformResourceHandler>,
  ) {
    this.upstreams = new Map(Object.entries(upstreams).map(([name, url]) => [name, resolveRoute({ url })]));
  }

  /** `path.segments[0]` is "events". */
  resolve(method: string, path: NormalisedPath, grant: KeyGrant): Promise<EventsTarget> | EventsTarget {
    const area = path.segments[1];
    if (area === 'bda') return this.bda(method, path, grant);
    if (area === 'platform' && path.segments[2] === 'api' && path.segments[3] === 'v1') {
      return this.platform(method, path, grant);
    }
    throw notFound(
      'unknown_endpoint',
      'no such endpoint: call /events/bda/<bda-id>/<service-id>/<path> or /events/platform/api/v1/<resource>',
    );
  }

  private bda(method: string, path: NormalisedPath, grant: KeyGrant): Promise<EventsTarget> | EventsTarget {
    const [, , workflow, service] = path.segments;
    if (workflow === undefined || service === undefined) {
      throw notFound('unknown_endpoint', 'workflow calls need /events/bda/<bda-id>/<service-id>/<path>');
    }
    if (!WORKFLOW_ID_PATTERN.test(workflow) || !WORKFLOW_ID_PATTERN.test(service)) {
      throw new TollgateError(
        'invalid_identifier',
        'workflow and service ids are letters, digits, "-", "_" and "."',
        {
          field: 'path',
        },
      );
    }
    const target = { kind: 'workflow', workflow } as const;
    enforce(this.admission.scope(grant, target));
    const found = this.routes.bda(workflow, service);
    const toTarget = (route: ResolvedRoute | null): EventsTarget => {
      if (route === null) {
        throw notFound('unknown_service', `workflow "${workflow}" exposes no service "${service}"`);
      }
      enforce(this.admission.claim(grant, target, route.route));
      const audience =
        route.route.grantAudience === undefined ? {} : { grantAudience: route.route.grantAudience };
      // A model published as the workflow's service: its inference costs the model's price; its
      // metadata and readiness cost what any call does.
      const isModel = route.route.source?.startsWith('model/') === true;
      const price =
        isModel && method === 'POST'
          ? this.admission.price({ kind: 'model', model: service }, true)
          : undefined;
      const cost = price === undefined ? {} : { cost: price.credits };
      const metered: Metered = isModel
        ? { kind: 'model', name: service }
        : { kind: 'workflow', name: `${workflow}/${service}` };
      // Only a route the operator wrote for a Model (its source says so, and it is sealed): a
      // Service a team labels with a model's name as its service id is proxied as its own.
      if (isModel && modelEndpoint(method, path, service) === 'infer') {
        const routed = { origin: route.origin, basePath: route.basePath, ...audience };
        if (price?.per === 'row') {
          const perRow = { credits: price.credits, endpoint: usageEndpoint(method, path), metered };
          return { kind: 'bda', inference: { model: service, workflow, routed, perRow }, metered };
        }
        return { kind: 'bda', inference: { model: service, workflow, routed }, metered, ...cost };
      }
      return {
        kind: 'bda',
        proxy: { origin: route.origin, path: upstreamPath(route.basePath, path, 4) },
        metered,
        ...audience,
        ...cost,
      };
    };
    return found instanceof Promise ? found.then(toTarget) : toTarget(found);
  }

  private platform(method: string, path: NormalisedPath, grant: KeyGrant): EventsTarget {
    const resource = path.segments[4];
    if (resource === undefined) {
      throw notFound('unknown_endpoint', 'platform calls need /events/platform/api/v1/<resource>');
    }
    const builtIn = this.builtIn.get(resource);
    const upstream = this.upstreams.get(resource);
    const target = {
      kind: 'platform',
      resource,
      method,
      served: builtIn !== undefined || upstream !== undefined,
    } as const;
    enforce(this.admission.scope(grant, target));
    const cost = { cost: this.admission.price(target, true).credits };
    const metered: Metered = { kind: 'platform', name: resource };
    if (builtIn !== undefined) return { kind: 'platform', builtIn, resource, metered, ...cost };
    const route = upstream as ResolvedRoute;
    // The upstream serves the platform's own REST paths: it receives /api/v1/<resource>[/...].
    return {
      kind: 'platform',
      proxy: { origin: route.origin, path: upstreamPath(route.basePath, path, 2) },
      metered,
      ...cost,
    };
  }
}

/** What a model's own V2 endpoints are under its workflow's service. */
const underWorkflow = V2_ENDPOINTS.filter((e) => e.underWorkflow !== undefined);

/** Those endpoints, as a caller writes them for `service`. */
function serviceEndpoints(service: string): string {
  return underWorkflow
    .map((e) => endpointText(e, '.../v2', service).replace('[/versions/<version>]', ''))
    .join(', ');
}

/**
 * What a call to a model published as a workflow service may reach: that model's own V2
 * endpoints that declare themselves reachable there (endpoint.ts), nothing else of its runtime
 * (MLServer also answers for other models it holds, and its repository API loads and unloads
 * them). `infer`: through the V2 core, checked as /v2 checks it; `proxy`: passed on.
 */
function modelEndpoint(method: string, path: NormalisedPath, service: string): 'infer' | 'proxy' {
  const rest = path.segments.slice(4);
  let route: V2Match | undefined;
  try {
    route = rest[0] === 'v2' ? matchV2(rest) : undefined;
  } catch {
    route = undefined;
  }
  const spec = route?.spec;
  if (route !== undefined && route.model === service && route.version !== undefined) {
    // The workflow route names the model, not its versions (each is its own runtime): a version is
    // called where /v2 checks and routes it, with the same key.
    throw notFound(
      'unknown_endpoint',
      `a version of "${service}" is called at /v2/models/${service}/versions/${route.version}/..., with the same key; under its workflow, ${serviceEndpoints(service)}`,
    );
  }
  // Its runtime's liveness and readiness (what a V2 client asks of its base URL first), or one of
  // the model's own endpoints: never another model's.
  if (spec?.underWorkflow === undefined || (spec.forModel && route?.model !== service)) {
    throw notFound(
      'unknown_endpoint',
      `"${service}" is a model: call its V2 endpoints under /events/bda/<bda-id>/${service}/ (${serviceEndpoints(service)})`,
    );
  }
  if (method !== spec.method) throw methodNotAllowed(spec.method);
  return spec.underWorkflow === 'core' ? 'infer' : 'proxy';
}

/** The base path, then the raw segments from `from` on, the trailing slash and the query, as sent. */
export function upstreamPath(basePath: string, path: NormalisedPath, from: number): string {
  const rest = path.raw.slice(from);
  const tail = rest.length === 0 ? '/' : `/${rest.join('/')}${path.trailingSlash ? '/' : ''}`;
  return basePath + tail + path.query;
}
