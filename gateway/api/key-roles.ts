import { TollgateError } from '../../common/errors.js';
import type { Module } from '../../common/resources/grant.js';
import type { ManagementDeps } from './deps.js';

/** What a key asks for that its owner must be entitled to. */
export interface KeyRoles {
  module: Module;
  roles: string[];
  models?: string[] | undefined;
}

/**
 * Whether `owner` may hold a key of these roles: a bda key names one workflow the owner owns
 * today, a platform key roles of the catalogue. A new key (POST /apikeys) and an imported one
 * (POST /admin/apikeys/import) are held to the same.
 */
export async function checkRoles(
  deps: Pick<ManagementDeps, 'workflows' | 'roles'>,
  owner: string,
  body: KeyRoles,
  /** How the messages name the owner: the caller's own keys by default. */
  whose = 'yours',
): Promise<void> {
  const duplicate = body.roles.find((r, i) => body.roles.indexOf(r) !== i);
  if (duplicate !== undefined) {
    throw new TollgateError('invalid_field', `roles: "${duplicate}" is listed twice; list each role once`, {
      field: 'roles',
    });
  }
  if (body.module === 'bda') {
    if (body.models !== undefined) {
      throw new TollgateError(
        'invalid_field',
        "models: only a platform key is limited to models; a bda key calls its own workflow's models only",
        { field: 'models' },
      );
    }
    const [workflow] = body.roles;
    if (body.roles.length !== 1 || workflow === undefined) {
      throw new TollgateError(
        'invalid_field',
        'roles: a bda key has exactly one role, the id of the workflow it calls',
        {
          field: 'roles',
        },
      );
    }
    const owned = await deps.workflows.ownedBy(owner);
    if (!owned.some((w) => w.workflow === workflow)) {
      throw new TollgateError(
        'unknown_workflow',
        `roles: "${workflow}" is not a workflow of ${whose}; GET /api/v1/modules lists the workflows you can choose`,
        { field: 'roles' },
      );
    }
    return;
  }
  const unknown = body.roles.find((r) => !deps.roles.has(r));
  if (unknown !== undefined) {
    throw new TollgateError(
      'unknown_role',
      `roles: "${unknown}" is not a platform role; GET /api/v1/modules lists the roles you can choose`,
      { field: 'roles' },
    );
  }
}
