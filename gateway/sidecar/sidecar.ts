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
import { refuseOtherOwner } from '../auth/workflow-owner.js';
import { createHttpServer, type GatewayServer } from '../server.js';
import type { GatewayServices } from '../services.js';
import { createV2Handler } from '../v2/router.js';
import type { AppProbes } from '../../common/sidecar-probes.js';
import { appHealthHandler } from './app-probes.js';

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
): ResolveTarget {
  const origin = target.upstream.origin;
  const basePath = target.upstream.pathname.replace(/\/+$/, '');
  return async (_method, path, grant) => {
    if (grant.module !== 'bda') {
      throw new TollgateError(
        'module_mismatch',
        `this key is for module "${grant.module}"; this service of workflow "${target.workflow}" takes bda keys of that workflow`,
      );
    }
    if (grant.roles.length !== 1 || grant.roles[0] !== target.workflow) {
      throw new TollgateError(
        'workflow_not_allowed',
        `this key is not for workflow "${target.workflow}"; use a key created for it`,
      );
    }
    // The workload's route (where the central gateway sends its calls) names the workflow's
    // owner today: a key its former owner made is refused here too, not only at the gateway.
    const route = await routes.bda(target.workflow, target.service);
    refuseOtherOwner(route?.route.owner, grant, target.workflow);
    return { kind: 'bda', proxy: { origin, path: upstreamPath(basePath, path, 0) } };
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
      return grants.verify(token, { method: req.method ?? '', target: req.url ?? '' });
    return s.keys.check(req);
  };
  const operations = createOperationsServer(s, appHealthHandler(opts.probes ?? {}));
  if (target.kind === 'workflow') {
    return {
      traffic: createHttpServer(s, createEventsHandler(s, workflowResolver(target, s.routes), authenticate)),
      operations,
    };
  }
  // A model's bda callers: as for a workflow service, the keys of the workflow's owner today (the
  // model's route names it), not those its former owner made. The pod's workflow label is its
  // author's: only the route the operator wrote says the model is that workflow's (its record
  // admits the model's namespace).
  const modelWorkflow = target.workflow;
  const checked: Authenticate =
    modelWorkflow === undefined
      ? authenticate
      : async (req) => {
          const grant = await authenticate(req);
          // Only a key of this model's workflow: any other is refused by the V2 access check,
          // with its own code.
          if (grant.module === 'bda' && grant.roles[0] === modelWorkflow) {
            const route = (await s.routes.model(target.model))?.route;
            // The route of this namespace's Model of the name: a pod elsewhere wearing its labels
            // takes nobody's keys.
            if (
              route?.workflow !== modelWorkflow ||
              route.source !== modelRouteSource(target.namespace, target.model)
            ) {
              throw new TollgateError(
                'workflow_not_allowed',
                `model '${target.model}' of namespace ${target.namespace} is not published for workflow "${modelWorkflow}" (no route of it names the workflow: its Workflow record must admit the namespace); use a platform key with role models:inference`,
              );
            }
            refuseOtherOwner(route.owner, grant, modelWorkflow);
          }
          return grant;
        };
  return { traffic: createHttpServer(s, modelDispatch(s, target, checked)), operations };
}

/** A model's sidecar: the V2 endpoints of its one model, whose runtime is the pod's MLServer. */
function modelDispatch(
  s: GatewayServices,
  target: Extract<SidecarTarget, { kind: 'model' }>,
  authenticate: Authenticate,
): Parameters<typeof createHttpServer>[1] {
  const url = target.upstream.toString();
  // A version's runtime serves that one version, by its name and as the model's unversioned paths.
  const runtime = resolveRoute({
    url,
    ...(target.workflow === undefined ? {} : { workflow: target.workflow }),
    ...(target.version === undefined ? {} : { versions: [{ name: target.version, url, percent: 100 }] }),
  });
  const info = {
    workflow: target.workflow,
    ...(target.version === undefined ? {} : { versions: [target.version] }),
  };
  const v2 = createV2Handler(
    s,
    {
      find: async (name) => (name === target.model ? info : undefined),
      list: async () => [{ name: target.model, ...info }],
    },
    { authenticate, modelRoute: (name) => (name === target.model ? runtime : null) },
  );
  return (req, res, path) => {
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
}
