import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { TollgateError } from '../errors.js';
import { creationOrder } from '../resources/claim-order.js';
import type { ManifestDir } from '../resources/manifest-dir.js';
import { MODEL_GROUP } from '../resources/model.js';
import { WORKFLOW_PLURAL, WORKFLOW_VERSION, workflowSchema, type Workflow } from '../resources/workflow.js';

/**
 * The Workflow records (an administrator's, cluster-scoped): who owns each workflow id. The
 * management API offers a user the workflows whose record names them, and makes bda keys for
 * those only, whether or not a service is routed yet.
 */
export interface WorkflowRecords {
  list(): Promise<Workflow[]>;
}

/** On a cluster: the Workflow resources, read when asked (the management API's pace). */
export class KubeWorkflowRecords implements WorkflowRecords {
  private readonly api: CustomObjectsApi;
  constructor(kc: KubeConfig) {
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  async list(): Promise<Workflow[]> {
    let answer: { items?: unknown[] };
    try {
      answer = (await this.api.listClusterCustomObject({
        group: MODEL_GROUP,
        version: WORKFLOW_VERSION,
        plural: WORKFLOW_PLURAL,
      })) as { items?: unknown[] };
    } catch (cause) {
      throw new TollgateError(
        'key_store_unavailable',
        'the Workflow records cannot be read from the Kubernetes API right now; retry shortly',
        { cause },
      );
    }
    return (answer.items ?? []).flatMap((item) => {
      const parsed = workflowSchema.safeParse(item);
      return parsed.success ? [parsed.data] : [];
    });
  }
}

/** Standalone: the Workflow manifests `tollgate route add` writes into the state directory. */
export class ManifestWorkflowRecords implements WorkflowRecords {
  constructor(private readonly manifests: ManifestDir) {}

  list(): Promise<Workflow[]> {
    return this.manifests.collection(WORKFLOW_PLURAL, workflowSchema).list();
  }
}

/** The record that holds each workflow id: the oldest, by the rule the operator routes by. */
export function recordsById(records: readonly Workflow[]): Map<string, Workflow> {
  const held = new Map<string, Workflow>();
  for (const r of [...records].sort(creationOrder)) {
    if (!held.has(r.spec.workflow)) held.set(r.spec.workflow, r);
  }
  return held;
}
