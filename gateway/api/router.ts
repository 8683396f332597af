import express, { type RequestHandler, type Router } from 'express';
import { TollgateError } from '../../common/errors.js';
import { TOLLGATE_VERSION } from '../../common/version.js';
import { authenticateUser, callerOf } from '../auth/oidc.js';
import { expressErrorHandler } from '../http/errors.js';
import type { ManagementDeps } from './deps.js';
import { openApiDocument } from './openapi.js';
import type { ManagementRoute } from './route.js';
import { managementRoutes } from './routes/index.js';
import { userPace } from './user-pace.js';

export type { ManagementDeps } from './deps.js';

const BODY_LIMIT = '16kb';

const methodNotAllowed =
  (allow: string): RequestHandler =>
  (req) => {
    throw new TollgateError('method_not_allowed', `${req.method} is not allowed here; use ${allow}`, {
      headers: { Allow: allow },
    });
  };

/** `/apikeys/{id}` as Express writes it: `/apikeys/:id`. */
const expressPath = (path: string): string => path.replace(/\{(\w+)\}/g, ':$1');

/** Mounts routes by path, each method with its body parser, and 405 for the others. */
function mount(router: Router, deps: ManagementDeps, list: readonly ManagementRoute[]): void {
  const byPath = new Map<string, ManagementRoute[]>();
  for (const r of list) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
  for (const [path, routes] of byPath) {
    const mounted = router.route(expressPath(path));
    for (const r of routes) {
      const handlers: RequestHandler[] = [r.handler(deps)];
      // A signed body is verified over its bytes, as sent: its route reads them itself, within a
      // budget, since anyone may send one before a signature says who sent it.
      if (r.auth !== 'scanner-signature' && r.body !== undefined)
        handlers.unshift(express.json({ limit: r.bodyLimit ?? BODY_LIMIT, strict: true }));
      if (r.beforeBody !== undefined) handlers.unshift(r.beforeBody(deps));
      mounted[r.method](...handlers);
    }
    mounted.all(methodNotAllowed(routes.map((r) => r.method.toUpperCase()).join(', ')));
  }
}

/**
 * The management API behind the panel, mounted at `/api/v1`: the routes of routes/, each declared
 * once with its contract. Every route acts as the user of the OIDC bearer token and sees only that
 * user's keys, but for `/admin/...`, for administrators only. Errors leave through the gateway's
 * one mapper, so the router answers correctly wherever it is mounted.
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
  // The routes a signature admits come before the bearer check; the others after it.
  mount(
    router,
    deps,
    managementRoutes.filter((r) => r.auth === 'scanner-signature'),
  );
  router.use(authenticateUser(deps.verifyToken));
  // Each caller's standing as their token shows it: an allOwners webhook hears everyone only while
  // its creator's right holds.
  router.use((_req, res, next) => {
    const caller = callerOf(res);
    deps.webhooks.admins.note(caller.subject, caller.admin);
    next();
  });
  router.use(userPace(deps.callsPerSecond));
  mount(
    router,
    deps,
    managementRoutes.filter((r) => r.auth !== 'scanner-signature'),
  );
  router.use((req) => {
    throw new TollgateError('unknown_endpoint', `no management API endpoint at ${req.baseUrl}${req.path}`);
  });
  router.use(expressErrorHandler(deps.log));
  return router;
}
