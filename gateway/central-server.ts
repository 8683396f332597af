import { createEventsHandler } from './events-handler.js';
import { createApp } from './http/app.js';
import { moduleOf } from './http/call-module.js';
import { sendError } from './http/errors.js';
import { createHttpServer, type GatewayServer } from './server.js';
import type { GatewayServices } from './services.js';
import type { V2Handler } from './v2/router.js';

/**
 * The central gateway: the HTTP shell (gateway/server.ts) dispatching on the path prefix.
 * `/events/...` and `/v2/...` are handled by raw handlers (no Express routing on the hot path);
 * everything else goes to the Express app.
 */
export function createGatewayServer(s: GatewayServices, v2: V2Handler): GatewayServer {
  const events = createEventsHandler(s);
  const app = createApp(s);
  return createHttpServer(s, (req, res, path) => {
    const first = path.segments[0];
    if (first === 'events') {
      events(req, res, path);
    } else if (first === 'v2') {
      res.once('finish', () => s.metrics.request('v2', res.statusCode, moduleOf(req)));
      Promise.resolve(v2(req, res, path)).catch((err: unknown) => sendError(res, err, s.log));
    } else {
      res.once('finish', () => s.metrics.request('management', res.statusCode, 'none'));
      app(req, res);
    }
  });
}
