import { createHash } from 'node:crypto';

/**
 * The Workflow resource (tollgate.dev/v1alpha1, cluster-scoped): who owns a workflow id and which
 * namespaces may serve it. The field rules are crds/workflows.yaml's (generated/workflows.ts).
 */
export {
  workflowSchema,
  workflowSpecSchema,
  type Workflow,
  type WorkflowSpec,
  WORKFLOW_API_VERSION,
  WORKFLOW_PLURAL,
} from './generated/workflows.js';

export const WORKFLOW_VERSION = 'v1alpha1';
export const WORKFLOW_KIND = 'Workflow';

/**
 * A resource name for a workflow id's record: ids may hold capitals and '_', names may not. The
 * hash keeps distinct ids distinct.
 */
export function workflowResourceName(id: string): string {
  const readable = id
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '')
    .slice(0, 200);
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 8);
  return readable === id ? id : `${readable || 'workflow'}-${hash}`;
}
