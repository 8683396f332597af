import express, { type Express } from 'express';
import { TollgateError } from '../../common/errors.js';
import { JWKS_PATH } from '../auth/local-issuer.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';
import { createPanelRouter } from './panel-files.js';
import type { GatewayServices } from '../services.js';
import { expressErrorHandler, sendError } from './errors.js';

/**
 * Everything off the hot path: health, readiness, metrics and the management API. Express is
 * fine here; `/events` and `/v2` never reach it.
 */
export function createApp(s: GatewayServices): Express {
  const app = bareApp();

  mountOperations(app, s);

  const oidc = s.config.oidc;
  app.use(
    '/panel',
    createPanelRouter(
      oidc?.clientId === undefined
        ? undefined
        : {
            issuer: oidc.issuer,
            clientId: oidc.clientId,
            scopes: oidc.scopes,
            redirectPath: oidc.redirectPath,
          },
      // Sign-in links (`#token=`) only from `tollgate dev`'s own issuer: with a provider, a link
      // could sign a victim into someone else's account (login CSRF).
      { tokenLinks: oidc === undefined },
    ),
  );
  if (s.management !== undefined) {
    if (s.management.jwks !== undefined) app.get(JWKS_PATH, s.management.jwks);
    app.use('/api/v1', s.management.router);
  }

  mountFallthrough(app, s);
  return app;
}

function bareApp(): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  return app;
}

/** `/healthz`, `/readyz` and `/metrics`, as both placements serve them. */
function mountOperations(app: Express, s: GatewayServices): void {
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  // Ready means a request could be checked right now: Redis answers, and no shutdown is under way.
  app.get('/readyz', async (_req, res) => {
    if (s.draining) {
      sendError(res, new TollgateError('shutting_down', 'this gateway replica is shutting down'), s.log);
      return;
    }
    try {
      await s.redis.ping();
      res.json({ status: 'ready' });
    } catch (err) {
      sendError(res, redisUnavailable(err), s.log);
    }
  });

  app.get('/metrics', async (_req, res) => {
    res.setHeader('content-type', s.metrics.registry.contentType);
    res.end(await s.metrics.registry.metrics());
  });
}

/**
 * A sidecar's operations port: health, readiness and metrics only. They live apart from the port
 * the workload's traffic comes through, where every path is the workload's.
 */
export function createOperationsApp(s: GatewayServices, mount?: (app: Express) => void): Express {
  const app = bareApp();
  mountOperations(app, s);
  mount?.(app);
  mountFallthrough(app, s);
  return app;
}

/** Unknown endpoints and thrown errors, answered in the gateway's JSON error shape. */
function mountFallthrough(app: Express, s: GatewayServices): void {
  app.use((req, res) => {
    sendError(res, new TollgateError('unknown_endpoint', `no such endpoint: ${req.method} ${req.path}`));
  });
  app.use(expressErrorHandler(s.log));
}
