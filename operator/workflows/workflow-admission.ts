import type { Workflow } from '../../common/resources/workflow.js';
import type { OwnedSource } from '../framework/controller.js';
import type { ResourceRef, WatchedSource } from '../framework/resource-source.js';
import { creationOrder } from '../../common/resources/claim-order.js';

export type Admission =
  { admitted: true; owner: string } | { admitted: false; reason: 'WorkflowNotAdmitted'; message: string };

/**
 * Whether a namespace may serve a workflow, from the Workflow records: a cluster-scoped resource
 * that administrators write, so a tenant can neither claim a workflow nor serve one from a
 * namespace the record does not name (labels are the tenant's own and prove nothing). Two
 * records naming one id: the oldest holds it, as the Gateway API settles conflicting routes.
 */
export class WorkflowAdmission {
  private readonly listeners = new Set<(id: string) => void>();
  private started: Promise<void> | undefined;
  private users = 0;

  constructor(private readonly workflows: WatchedSource<Workflow>) {}

  /** The record that holds `id`, if any. */
  record(id: string): Workflow | undefined {
    return this.workflows
      .list()
      .filter((w) => w.spec.workflow === id)
      .sort(creationOrder)[0];
  }

  admit(id: string, namespace: string): Admission {
    const record = this.record(id);
    // One answer whether the id has no record or its record names other namespaces: the tenant
    // is not told which workflows exist, nor whose namespaces serve them.
    if (record === undefined || !record.spec.namespaces.includes(namespace)) {
      return {
        admitted: false,
        reason: 'WorkflowNotAdmitted',
        message: `no Workflow resource lets namespace '${namespace}' serve workflow '${id}'; an administrator names the workflow in one (spec.workflow, spec.owner) and lists '${namespace}' in its spec.namespaces`,
      };
    }
    return { admitted: true, owner: record.spec.owner };
  }

  /**
   * What a reconciler declares it watches: a change to a Workflow (or its deletion) enqueues the
   * resources `affected` names for its id. Every reconciler shares the one informer.
   */
  watch(affected: (id: string) => ResourceRef[]): OwnedSource {
    let listener: ((id: string) => void) | undefined;
    return {
      start: async (onChange) => {
        listener = (id) => affected(id).forEach(onChange);
        this.listeners.add(listener);
        this.users += 1;
        this.started ??= this.workflows.start((ref, gone) => this.changed(ref, gone));
        await this.started;
      },
      stop: async () => {
        if (listener !== undefined) this.listeners.delete(listener);
        this.users -= 1;
        if (this.users > 0 || this.started === undefined) return;
        this.started = undefined;
        await this.workflows.stop();
      },
    };
  }

  private changed(ref: ResourceRef, gone: Workflow | undefined): void {
    const id = (gone ?? this.workflows.get(ref))?.spec.workflow;
    if (id === undefined) return;
    for (const l of this.listeners) l(id);
  }
}
