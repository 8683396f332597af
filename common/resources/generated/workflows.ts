// Generated from crds/workflows.yaml by tools/codegen/generate-types.ts. Do not edit: change the CRD
// and run `npm run codegen`.
import { z } from 'zod';
import { objectMetaSchema } from '../object-meta.js';

export const WORKFLOW_API_VERSION = 'tollgate.dev/v1alpha1';
export const WORKFLOW_PLURAL = 'workflows';

export const workflowSpecSchema = z.object({
  /** The workflow id, as Services carry it in the tollgate.dev/workflow label. */
  workflow: z.string().min(1).max(63).regex(new RegExp('^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')),
  /** The subject of the user who owns the workflow; only they may create its bda keys. */
  owner: z.string().min(1).max(255),
  /** The namespaces whose labelled Services (and Models) may serve the workflow. */
  namespaces: z
    .array(z.string().min(1).max(63).regex(new RegExp('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')))
    .min(1)
    .max(64),
});
export type WorkflowSpec = z.infer<typeof workflowSpecSchema>;

/** Who owns a workflow and which namespaces may serve its services. */
export const workflowSchema = z.object({
  apiVersion: z.literal('tollgate.dev/v1alpha1'),
  kind: z.literal('Workflow'),
  metadata: objectMetaSchema,
  spec: workflowSpecSchema,
});
export type Workflow = z.infer<typeof workflowSchema>;
