import type { RequestHandler } from 'express';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { modulesSchema } from '../views.js';
import type { ManagementRoute } from '../route.js';

/**
 * GET /modules: what the create dialog offers. Module bda: the caller's workflows (a bda key's one
 * role); module platform: the role catalogue.
 */
function listModules(deps: ManagementDeps): RequestHandler {
  return async (_req, res) => {
    const workflows = await deps.workflows.ownedBy(callerOf(res).subject);
    res.json({
      modules: [
        {
          module: 'bda',
          description: 'Call the REST endpoints of one of your workflows',
          roles: workflows.map((w) => ({
            id: w.workflow,
            description: `services: ${w.services.join(', ')}`,
          })),
        },
        {
          module: 'platform',
          description: 'Call the platform REST resources (/api/v1/<resource>)',
          roles: deps.roles.roles.map((r) => ({ id: r.name, description: r.description })),
        },
      ],
    });
  };
}

export const listModulesRoute: ManagementRoute = {
  method: 'get',
  path: '/modules',
  operationId: 'listModules',
  summary: 'What a new key may be scoped to: your workflows, and the platform roles',
  ok: { status: 200, description: 'The modules and their roles', schema: modulesSchema },
  errors: [401, 503],
  handler: listModules,
};
