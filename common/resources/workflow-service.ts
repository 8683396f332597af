import { createHash } from 'node:crypto';
import { z } from 'zod';
import { TollgateError } from '../errors.js';
import type { ManifestCollection } from './manifest-dir.js';
import { SERVICE_LABEL, SIDECAR_ANNOTATION, URL_ANNOTATION, WORKFLOW_LABEL } from './labels.js';
import { WORKFLOW_API_VERSION, WORKFLOW_KIND, workflowResourceName, type Workflow } from './workflow.js';

/**
 * A workflow service is a Kubernetes Service with the `tollgate.dev/workflow` and
 * `tollgate.dev/service` labels, on a cluster and in standalone mode alike (there as a manifest in
 * `<state-dir>/services/`, with its URL in an annotation). The operator turns it into the route
 * `/events/bda/<workflow>/<service>/...`; nothing else writes workflow routes.
 */
export interface WorkflowService {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    /** Which of two Services claiming one workflow service came first (a Date from the informer). */
    creationTimestamp?: string | Date;
    /** Set while a finalizer holds a deleted Service (operator/route-hold.ts). */
    deletionTimestamp?: string | Date;
    finalizers?: string[];
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: {
    type?: string;
    clusterIP?: string;
    selector?: Record<string, string>;
    ports?: Array<{ name?: string; port: number }>;
  };
}

export const SERVICES_PLURAL = 'services';

// The shape of a Kubernetes label value, since the ids are `tollgate.dev/workflow` and
// `tollgate.dev/service` labels. It also rules out `.`, `..`, `/` and `:` in a path or Redis key.
export const WORKFLOW_ID_PATTERN = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

const idSchema = (what: string) =>
  z
    .string()
    .regex(
      WORKFLOW_ID_PATTERN,
      `a ${what} id is 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
    );

/** What `tollgate route add` is given. */
export const workflowServiceInputSchema = z.strictObject({
  workflow: idSchema('workflow'),
  service: idSchema('service'),
  url: z.url({ protocol: /^https?$/, error: 'url must be an http:// or https:// base URL of the service' }),
  owner: z.string().min(1).max(255),
  /** It answers through `tollgate sidecar`: calls through the central gateway carry a signed grant. */
  sidecar: z.boolean().optional(),
});
export type WorkflowServiceInput = z.infer<typeof workflowServiceInputSchema>;

/** A Service manifest as the manifest directory reads it: metadata checked, the rest kept. */
export const workflowServiceManifestSchema = z.looseObject({
  metadata: z.looseObject({
    name: z.string(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
}) as unknown as z.ZodType<WorkflowService>;

/**
 * A manifest name for a workflow service: readable, a valid resource name whatever the ids'
 * case or characters, and distinct for distinct (workflow, service) pairs (the hash).
 */
export function workflowServiceName(workflow: string, service: string): string {
  const readable = `${workflow}-${service}`
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, '-')
    .slice(0, 200);
  const hash = createHash('sha256').update(`${workflow}\n${service}`).digest('hex').slice(0, 8);
  return `${readable}-${hash}`.replace(/^[^a-z0-9]+/, '');
}

/**
 * Standalone mode's workflow services: Service manifests written by `tollgate route add`, and the
 * Workflow record of each workflow, which holds its owner (the operator routes nothing without
 * one). A workflow belongs to one owner: a service cannot be added to another owner's workflow, or
 * that owner's bda keys would reach it.
 */
export class WorkflowServiceManifests {
  constructor(
    private readonly services: ManifestCollection<WorkflowService>,
    private readonly workflows: ManifestCollection<Workflow>,
  ) {}

  /** Adds (or updates) a workflow service; returns the manifest's name. */
  async add(input: WorkflowServiceInput): Promise<string> {
    const s = workflowServiceInputSchema.parse(input);
    const record = (await this.workflows.list()).find((w) => w.spec.workflow === s.workflow);
    if (record !== undefined && record.spec.owner !== s.owner) {
      throw new TollgateError(
        'workflow_owned_by_another_user',
        `workflow ${s.workflow} belongs to another owner; choose another workflow id`,
        { field: 'workflow' },
      );
    }
    if (record === undefined) {
      await this.workflows.put({
        apiVersion: WORKFLOW_API_VERSION,
        kind: WORKFLOW_KIND,
        metadata: { name: workflowResourceName(s.workflow) },
        // Standalone manifests have no namespace: the operator reads them as `default`'s.
        spec: { workflow: s.workflow, owner: s.owner, namespaces: ['default'] },
      });
    }
    const existing = (await this.ofWorkflow(s.workflow)).find(
      (svc) => svc.metadata.labels?.[SERVICE_LABEL] === s.service,
    );
    const name = existing?.metadata.name ?? workflowServiceName(s.workflow, s.service);
    await this.services.put({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name,
        labels: { [WORKFLOW_LABEL]: s.workflow, [SERVICE_LABEL]: s.service },
        annotations: {
          [URL_ANNOTATION]: s.url,
          ...(s.sidecar === true ? { [SIDECAR_ANNOTATION]: 'true' } : {}),
        },
      },
    });
    return name;
  }

  /** Removes a workflow service (and the workflow's record with its last one); false if there was none. */
  async remove(workflow: string, service: string): Promise<boolean> {
    const all = await this.ofWorkflow(workflow);
    const found = all.filter((svc) => svc.metadata.labels?.[SERVICE_LABEL] === service);
    for (const svc of found) await this.services.delete(svc.metadata.name);
    if (found.length > 0 && found.length === all.length) {
      for (const w of await this.workflows.list())
        if (w.spec.workflow === workflow) await this.workflows.delete(w.metadata.name);
    }
    return found.length > 0;
  }

  private async ofWorkflow(workflow: string): Promise<WorkflowService[]> {
    return (await this.services.list()).filter((svc) => svc.metadata.labels?.[WORKFLOW_LABEL] === workflow);
  }
}
