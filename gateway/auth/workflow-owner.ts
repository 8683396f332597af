import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';

/**
 * Only the owner of a workflow makes bda keys for it, and a route carries the owner its Workflow
 * record names today: a key made before the workflow changed hands (its record's owner rewritten
 * by an administrator) no longer calls it, on any path.
 */
export function refuseOtherOwner(routeOwner: string | undefined, grant: KeyGrant, workflow: string): void {
  if (routeOwner !== undefined && routeOwner !== grant.owner) {
    throw new TollgateError(
      'workflow_not_owned',
      `workflow "${workflow}" now belongs to another owner, and this key was made by its former one; its owner makes a new key`,
    );
  }
}
