import express, { type RequestHandler, type Router } from 'express';
import { TollgateError } from '../../common/errors.js';
import { authenticateUser } from '../auth/oidc.js';
import { expressErrorHandler } from '../http/errors.js';
import { TOLLGATE_VERSION } from '../../common/version.js';
import type { ManagementDeps } from './deps.js';
import { openApiDocument } from './openapi.js';
import { createKey } from './routes/create-key.js';
import { deleteKey } from './routes/delete-key.js';
import { getKey } from './routes/get-key.js';
import { listKeys } from './routes/list-keys.js';
import { listModules } from './routes/list-modules.js';
import { keyUsage } from './routes/key-usage.js';
import { listAudit } from './routes/list-audit.js';
import { rollKey } from './routes/roll-key.js';
import { adminDeleteKey } from './routes/admin-delete-key.js';
import { adminListKeys } from './routes/admin-list-keys.js';
import { offboard } from './routes/offboard.js';
import { whoami } from './routes/whoami.js';
import { listModels } from './routes/list-models.js';

export type { ManagementDeps } from './deps.js';

const BODY_LIMIT = '16kb';

const methodNotAllowed =
  (allow: string): RequestHandler =>
  (req) => {
    throw new TollgateError('method_not_allowed', `${req.method} is not allowed here; use ${allow}`, {
      headers: { Allow: allow },
    });
  };

/**
 * The management API behind the panel, mounted at `/api/v1`. Every route acts as the user of the
 * OIDC bearer token and sees only that user's keys, but for `/admin/...`, for administrators only. Errors leave through the gateway's one mapper,
 * so the router answers correctly wherever it is mounted.
 */
export function createManagementRouter(deps: ManagementDeps): Router {
  const router = express.Router({ strict: false, caseSensitive: true });
  router.use((_req, res, next) => {
    // Answers hold per-user data and, once, a key: no cache may keep them.
    res.set('Cache-Control', 'no-store');
    next();
  });
  // The contract is public: a client generator or a fuzzer reads it before it has a token.
  const contract = openApiDocument({
    maxRollGraceSeconds: deps.maxRollGraceSeconds,
    version: TOLLGATE_VERSION,
  });
  router
    .route('/openapi.json')
    .get((_req, res) => {
      res.json(contract);
    })
    .all(methodNotAllowed('GET'));
  router.use(authenticateUser(deps.verifyToken));
  router
    .route('/apikeys')
    .get(listKeys(deps))
    .post(express.json({ limit: BODY_LIMIT, strict: true }), createKey(deps))
    .all(methodNotAllowed('GET, POST'));
  router.route('/apikeys/:id').get(getKey(deps)).delete(deleteKey(deps)).all(methodNotAllowed('GET, DELETE'));
  router
    .route('/apikeys/:id/roll')
    .post(express.json({ limit: BODY_LIMIT, strict: true }), rollKey(deps))
    .all(methodNotAllowed('POST'));
  router.route('/apikeys/:id/usage').get(keyUsage(deps)).all(methodNotAllowed('GET'));
  router.route('/audit').get(listAudit(deps)).all(methodNotAllowed('GET'));
  router.route('/modules').get(listModules(deps)).all(methodNotAllowed('GET'));
  router.route('/me').get(whoami()).all(methodNotAllowed('GET'));
  router.route('/models').get(listModels(deps)).all(methodNotAllowed('GET'));
  // Administrators' routes: each refuses a caller outside the admin groups with 403.
  router.route('/admin/apikeys').get(adminListKeys(deps)).all(methodNotAllowed('GET'));
  router.route('/admin/apikeys/:id').delete(adminDeleteKey(deps)).all(methodNotAllowed('DELETE'));
  router
    .route('/admin/offboard')
    .post(express.json({ limit: BODY_LIMIT, strict: true }), offboard(deps))
    .all(methodNotAllowed('POST'));
  router.use((req) => {
    throw new TollgateError('unknown_endpoint', `no management API endpoint at ${req.baseUrl}${req.path}`);
  });
  router.use(expressErrorHandler(deps.log));
  return router;
}
