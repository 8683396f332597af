import express, { type Express } from 'express';
import { TollgateError } from '../../common/errors.js';
import { JWKS_PATH } from '../auth/local-issuer.js';
import { createPanelRouter } from './panel-files.js';
import type { GatewayServices } from '../services.js';
import { expressErrorHandler, sendError } from './errors.js';
import { answerOperations } from './operations.js';

/**
 * Everything off the hot path: health, readiness, metrics, the panel and the management API.
 * Express is fine here; `/events` and `/v2` never reach it.
 */
export function createApp(s: GatewayServices): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  // With an operations port of its own, the traffic port keeps only the probes.
  const operations = { metrics: s.config.metricsPort === undefined };
  app.use((req, res, next) => {
    if (!answerOperations(s, req, res, operations)) next();
  });

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

/** Unknown endpoints and thrown errors, answered in the gateway's JSON error shape. */
function mountFallthrough(app: Express, s: GatewayServices): void {
  app.use((req, res) => {
    sendError(res, new TollgateError('unknown_endpoint', `no such endpoint: ${req.method} ${req.path}`));
  });
  app.use(expressErrorHandler(s.log));
}
