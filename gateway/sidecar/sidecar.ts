import type { Server } from 'node:http';
import { TollgateError } from '../../common/errors.js';
import { grantAudience, modelRouteSource } from '../../common/resources/grant.js';
import { GRANT_HEADER, GrantVerifier, claimInRedis } from '../auth/signed-grant.js';
import type { Authenticate } from '../auth/authenticate.js';
import { createEventsHandler, type ResolveTarget } from '../events-handler.js';
import { createOperationsServer } from '../http/operations.js';
import { moduleOf } from '../http/call-module.js';
import { sendError } from '../http/errors.js';
import { upstreamPath } from '../routing/events-router.js';
import { resolveRoute, type RouteTable } from '../routing/route-table.js';
import { enforce, type Admission } from '../admission/admission.js';
import { createHttpServer, type GatewayServer } from '../server.js';
import type { GatewayServices } from '../services.js';
import { createV2Handler } from '../v2/router.js';
import { createV2Core } from '../v2/core.js';
import type { V2Placement } from '../v2/access.js';
import type { ModelDirectory } from '../v2/model-directory.js';
import type { AppProbes } from '../../common/sidecar-probes.js';
import { appHealthHandler } from './app-probes.js';
import { currentCall } from '../../common/tracing/call-trace.js';
import { contextFromHeaders } from '../tracing/trace-context.js';

/**
 * The gateway as a sidecar: in front of one workload, in its pod or beside it on one machine. The
 * workload is a workflow's service (every path is the workload's own, sent on as it came; a call
 * passes with a bda key of that workflow) or a model's MLServer (the V2 endpoints of that one
 * model, with the keys the central gateway's /v2 takes for it). It is the central gateway's code in
 * another placement: the same key check and caches (trusted only while the invalidation channel is
 * live), rate limits, usage, proxy, V2 checks, error bodies and metrics. Health, readiness, metrics
 * and the workload's own probes answer on a port of their own, since every path of the traffic
 * port belongs to the workload.
 */
export type SidecarTarget = (
  | {
      kind: 'workflow';
      /** Where the workload listens (in a pod: loopback only, so nothing reaches it but the sidecar). */
      upstream: URL;
      workflow: string;
      service: string;
    }
  | { kind: 'model'; upstream: URL; model: string; version?: string; workflow?: string }
) & {
  /** The workload's namespace (its pod's, on a cluster): grants for another's are refused. */
  namespace: string;
};

export const sidecarAudience = (t: SidecarTarget): string =>
  t.kind === 'workflow'
    ? grantAudience.service(t.namespace, t.workflow, t.service)
    : grantAudience.model(t.namespace, t.model);

export function workflowResolver(
  target: Extract<SidecarTarget, { kind: 'workflow' }>,
  routes: Pick<RouteTable, 'bda'>,
  admission: Pick<Admission, 'scope' | 'claim'>,
): ResolveTarget {
  const origin = target.upstream.origin;
  const basePath = target.upstream.pathname.replace(/\/+$/, '');
  const asked = { kind: 'workflow', workflow: target.workflow } as const;
  return async (_method, path, grant) => {
    enforce(admission.scope(grant, asked));
    // The workload's route (where the central gateway sends its calls) names the workflow's
    // owner today: a key its former owner made is refused here too, not only at the gateway.
    const route = await routes.bda(target.workflow, target.service);
    enforce(admission.claim(grant, asked, route?.route ?? {}));
    return {
      kind: 'bda',
      proxy: { origin, path: upstreamPath(basePath, path, 0) },
      metered: { kind: 'workflow', name: `${target.workflow}/${target.service}` },
    };
  };
}

export interface Sidecar {
  /** The workload's traffic. */
  traffic: GatewayServer;
  /** /healthz, /readyz, /metrics and /app-health/<container>/<probe>. */
  operations: Server;
}

export interface SidecarOptions {
  /** Verifies the grants the central gateway signs (default: with this process's trusted keys). */
  grants?: GrantVerifier;
  /** The workload's own probes, run on its loopback for the kubelet. */
  probes?: AppProbes;
}

/**
 * A call that came through the central gateway is let in on the grant it signed (no Redis round
 * trip); a grant that does not verify is refused, never taken for a missing one. Any other call is
 * checked in full on its key.
 */
export function createSidecar(s: GatewayServices, target: SidecarTarget, opts: SidecarOptions = {}): Sidecar {
  const grants =
    opts.grants ??
    GrantVerifier.fromTrust(s.trust.verifier.trusted, sidecarAudience(target), claimInRedis(s.redis));
  const authenticate: Authenticate = (req) => {
    const token = req.headers[GRANT_HEADER];
    if (typeof token === 'string')
      return grants.verify(token, { method: req.method ?? '', target: req.url ?? '' }).then((grant) => {
        // The central gateway sent it (its grant is verified): the call continues the gateway's trace.
        currentCall()?.adopt(contextFromHeaders(req.headers));
        return grant;
      });
    return s.keys.check(req);
  };
  const operations = createOperationsServer(s, appHealthHandler(opts.probes ?? {}));
  if (target.kind === 'workflow') {
    return {
      traffic: createHttpServer(
        s,
        createEventsHandler(s, workflowResolver(target, s.routes, s.admission), authenticate),
      ),
      operations,
    };
  }
  return { traffic: modelTraffic(s, target, authenticate), operations };
}

/**
 * What a model's sidecar knows of its one model: its directory (the model, its version) and its
 * placement (its runtime is the pod's MLServer). Who the model is published for (its workflow,
 * and that workflow's owner today) is what the operator's route of this namespace's Model of the
 * name says, never the pod's labels (its author's): a route of another namespace's Model, or
 * none, publishes it for no workflow, and bda keys are refused as at the central gateway, by the
 * same admission core.
 */
export function modelSidecarPlacement(
  routes: Pick<RouteTable, 'model'>,
  target: Extract<SidecarTarget, { kind: 'model' }>,
  authenticate: Authenticate,
): { directory: ModelDirectory; placement: V2Placement } {
  const url = target.upstream.toString();
  const versions =
    target.version === undefined ? {} : { versions: [{ name: target.version, url, percent: 100 }] };
  const claimed = async (): Promise<{ workflow?: string; owner?: string }> => {
    const route = (await routes.model(target.model))?.route;
    if (route?.workflow === undefined || route.source !== modelRouteSource(target.namespace, target.model))
      return {};
    return { workflow: route.workflow, ...(route.owner === undefined ? {} : { owner: route.owner }) };
  };
  const info = async () => ({
    workflow: (await claimed()).workflow,
    ...(target.version === undefined ? {} : { versions: [target.version] }),
  });
  return {
    directory: {
      find: async (name) => (name === target.model ? info() : undefined),
      list: async () => [{ name: target.model, ...(await info()) }],
    },
    placement: {
      authenticate,
      // A version's runtime serves that one version, by its name and as the model's unversioned paths.
      modelRoute: async (name) =>
        name === target.model ? resolveRoute({ url, ...(await claimed()), ...versions }) : null,
    },
  };
}

/** A model's sidecar: the V2 endpoints of its one model (REST and gRPC), whose runtime is the pod's MLServer. */
function modelTraffic(
  s: GatewayServices,
  target: Extract<SidecarTarget, { kind: 'model' }>,
  authenticate: Authenticate,
): GatewayServer {
  const { directory, placement } = modelSidecarPlacement(s.routes, target, authenticate);
  const core = createV2Core(s, directory, placement);
  const v2 = createV2Handler(core);
  const dispatch: Parameters<typeof createHttpServer>[1] = (req, res, path) => {
    res.once('finish', () => s.metrics.request('v2', res.statusCode, moduleOf(req)));
    if (path.segments[0] !== 'v2') {
      sendError(
        res,
        new TollgateError(
          'unknown_endpoint',
          `this is model '${target.model}': call /v2/models/${target.model}[/ready|/infer]`,
        ),
      );
      return;
    }
    v2(req, res, path).catch((err: unknown) => sendError(res, err, s.log));
  };
  return createHttpServer(s, dispatch, core);
}
