import type { AddressInfo } from 'node:net';
import { createEventsHandler } from './events-handler.js';
import { createApp } from './http/app.js';
import { moduleOf } from './http/call-module.js';
import { sendError } from './http/errors.js';
import { createOperationsServer } from './http/operations.js';
import { createHttpServer, listenOn, type GatewayServer } from './server.js';
import type { GatewayServices } from './services.js';
import type { V2Context } from './v2/endpoint.js';
import { createV2Handler } from './v2/router.js';
import { ANSWER_STYLES } from './forward-auth/answers.js';
import { createForwardAuthHandler } from './forward-auth/http-entry.js';

export interface CentralGateway extends GatewayServer {
  /** Where `/metrics` is served when the config gives it a port of its own (bound by `listen`). */
  metricsAddress(): AddressInfo | undefined;
  /** The port Envoy's ext_authz is answered on, when the config gives one (bound by `listen`). */
  extAuthzPort(): number | undefined;
}

/**
 * The central gateway: the HTTP shell (gateway/server.ts) dispatching on the path prefix.
 * `/events/...`, `/v2/...` and the decision for another proxy (`/auth/forward`, `/auth/request`:
 * forward-auth/) are handled by raw handlers (no Express routing on the hot path); everything
 * else goes to the Express app. With `metricsPort`, `/metrics` is served there alone.
 */
export function createGatewayServer(s: GatewayServices, v2: V2Context): CentralGateway {
  return withExtAuthz(s, v2, withOperations(s, createTraffic(s, v2)));
}

/** Envoy's ext_authz on a port of its own, when the config gives one; gRPC's libraries load only then. */
function withExtAuthz(
  s: GatewayServices,
  v2: V2Context,
  inner: Omit<CentralGateway, 'extAuthzPort'>,
): CentralGateway {
  const port = s.config.extAuthzPort;
  if (port === undefined) return { ...inner, extAuthzPort: () => undefined };
  let server: { shutdown(timeoutMs: number): Promise<void> } | undefined;
  let bound: number | undefined;
  return {
    ...inner,
    async listen(trafficPort, host) {
      const { ExtAuthzServer } = await import('./forward-auth/ext-authz.js');
      const extAuthz = new ExtAuthzServer(s, v2);
      server = extAuthz;
      bound = await extAuthz.listen(port, host);
      return inner.listen(trafficPort, host);
    },
    extAuthzPort: () => bound,
    async shutdown() {
      await Promise.all([server?.shutdown(s.config.shutdownTimeoutMs), inner.shutdown()]);
    },
  };
}

function withOperations(s: GatewayServices, traffic: GatewayServer): Omit<CentralGateway, 'extAuthzPort'> {
  const metricsPort = s.config.metricsPort;
  if (metricsPort === undefined) return { ...traffic, metricsAddress: () => undefined };
  const operations = createOperationsServer(s);
  let address: AddressInfo | undefined;
  return {
    ...traffic,
    async listen(port, host) {
      address = await listenOn(operations, metricsPort, host);
      return traffic.listen(port, host);
    },
    metricsAddress: () => address,
    shutdown() {
      // Scrapes are short; the last one may be cut.
      operations.close();
      operations.closeAllConnections();
      return traffic.shutdown();
    },
  };
}

function createTraffic(s: GatewayServices, core: V2Context): GatewayServer {
  const events = createEventsHandler(s);
  const app = createApp(s);
  const v2 = createV2Handler(core);
  const forwardAuth = new Map(
    Object.entries(ANSWER_STYLES).map(([name, style]) => [name, createForwardAuthHandler(s, core, style)]),
  );
  return createHttpServer(
    s,
    (req, res, path) => {
      const first = path.segments[0];
      const decide =
        first === 'auth' && path.segments.length === 2 ? forwardAuth.get(path.segments[1] ?? '') : undefined;
      if (first === 'events') {
        events(req, res, path);
      } else if (decide !== undefined) {
        decide(req, res);
      } else if (first === 'v2') {
        res.once('finish', () => s.metrics.request('v2', res.statusCode, moduleOf(req)));
        Promise.resolve(v2(req, res, path)).catch((err: unknown) => sendError(res, err, s.log));
      } else {
        res.once('finish', () => s.metrics.request('management', res.statusCode, 'none'));
        app(req, res);
      }
    },
    core,
  );
}
