import type { Express } from 'express';
import { TollgateError } from '../../common/errors.js';
import { GRANT_HEADER, type GrantVerifier } from '../auth/signed-grant.js';
import { createEventsHandler, type Authenticate, type ResolveTarget } from '../events-handler.js';
import { createOperationsApp } from '../http/app.js';
import { upstreamPath } from '../routing/events-router.js';
import { createHttpServer, type GatewayServer } from '../server.js';
import type { GatewayServices } from '../services.js';

/**
 * The gateway as a sidecar: in front of one workload (a workflow's service), in its pod or beside
 * it on one machine. Every path is the workload's own, sent on as it came; a call passes only with
 * a bda key of the workload's workflow. It is the central gateway's code in another placement: the
 * same key check and caches (trusted only while the invalidation channel is live), rate limits,
 * usage, proxy, error bodies and metrics. Health, readiness and metrics answer on a port of their
 * own, since every path of the traffic port belongs to the workload.
 */
export interface SidecarTarget {
  /** Where the workload listens (in a pod: loopback only, so nothing reaches it but the sidecar). */
  upstream: URL;
  workflow: string;
  service: string;
}

export function sidecarResolver(target: SidecarTarget): ResolveTarget {
  const origin = target.upstream.origin;
  const basePath = target.upstream.pathname.replace(/\/+$/, '');
  return (_method, path, grant) => {
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
    return { kind: 'bda', proxy: { origin, path: upstreamPath(basePath, path, 0) } };
  };
}

export interface Sidecar {
  /** The workload's traffic. */
  traffic: GatewayServer;
  /** /healthz, /readyz, /metrics. */
  operations: Express;
}

/**
 * With `grants`, a call that came through the central gateway is let in on the grant it signed
 * (no Redis round trip); a grant that does not verify is refused, never taken for a missing one.
 * Any other call is checked in full on its key.
 */
export function createSidecar(s: GatewayServices, target: SidecarTarget, grants?: GrantVerifier): Sidecar {
  const authenticate: Authenticate = (req) => {
    const token = req.headers[GRANT_HEADER];
    if (grants !== undefined && typeof token === 'string') return grants.verify(token);
    return s.keys.check(req.headers.authorization);
  };
  return {
    traffic: createHttpServer(s, createEventsHandler(s, sidecarResolver(target), authenticate)),
    operations: createOperationsApp(s),
  };
}
