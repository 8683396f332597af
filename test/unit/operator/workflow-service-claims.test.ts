import type { Route } from '../../../common/resources/grant.js';
import type { Workflow } from '../../../common/resources/workflow.js';
import type { WorkflowService } from '../../../common/resources/workflow-service.js';
import { createLogger } from '../../../common/logger.js';
import type { EventRecorder } from '../../../operator/events.js';
import { refKey, type ResourceRef, type WatchedSource } from '../../../operator/framework/resource-source.js';
import {
  clusterServiceAddress,
  WorkflowServiceReconciler,
} from '../../../operator/controllers/workflow-service-controller.js';
import { WorkflowAdmission } from '../../../operator/workflows/workflow-admission.js';

/** A watched set held in memory: what an informer's cache holds, changed by the test. */
class Held<T extends { metadata: { name: string; namespace?: string } }> implements WatchedSource<T> {
  readonly items = new Map<string, T>();
  private onChange: ((ref: ResourceRef, gone: T | undefined) => void) | undefined;
  start(onChange: (ref: ResourceRef, gone: T | undefined) => void): Promise<void> {
    this.onChange = onChange;
    return Promise.resolve();
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
  get(ref: ResourceRef): T | undefined {
    return this.items.get(refKey(ref));
  }
  list(): T[] {
    return [...this.items.values()];
  }
  put(item: T): void {
    const ref = { namespace: item.metadata.namespace ?? '', name: item.metadata.name };
    this.items.set(refKey(ref), item);
    this.onChange?.(ref, undefined);
  }
  delete(ref: ResourceRef): void {
    const gone = this.items.get(refKey(ref));
    this.items.delete(refKey(ref));
    this.onChange?.(ref, gone);
  }
}

const service = (namespace: string, name: string, created: string, wf = 'fraud'): WorkflowService => ({
  metadata: {
    name,
    namespace,
    creationTimestamp: created,
    labels: {
      'tollgate.dev/workflow': wf,
      'tollgate.dev/service': 'scorer',
      'tollgate.dev/owner': 'mallory',
    },
  },
  spec: { clusterIP: '10.96.0.80', selector: { app: 'scorer' }, ports: [{ name: 'http', port: 80 }] },
});
const record = (namespaces: string[], owner = 'alice', created = '2026-01-01T00:00:00Z'): Workflow => ({
  apiVersion: 'tollgate.dev/v1alpha1',
  kind: 'Workflow',
  metadata: { name: `fraud-${owner}`, creationTimestamp: created },
  spec: { workflow: 'fraud', owner, namespaces },
});

describe('workflow service claims (the operator’s admission and conflict rules)', () => {
  const KEY = 'tg:route:bda:fraud:scorer';
  let services: Held<WorkflowService>;
  let workflows: Held<Workflow>;
  let routes: Map<string, Route>;
  let events: string[];
  let reconciler: WorkflowServiceReconciler;

  beforeEach(async () => {
    services = new Held();
    workflows = new Held();
    routes = new Map();
    events = [];
    const recorder: EventRecorder = {
      record: (obj, type, reason) => {
        events.push(`${obj.metadata.namespace ?? ''}/${obj.metadata.name} ${type} ${reason}`);
        return Promise.resolve();
      },
    };
    reconciler = new WorkflowServiceReconciler({
      services,
      workflows: new WorkflowAdmission(workflows),
      routes: {
        put: (key, route) => {
          routes.set(key, route);
          return Promise.resolve(true);
        },
        // As the Redis script does: only the writer's own route.
        remove: (key, source) => {
          const had = routes.get(key);
          if (had === undefined || (source !== undefined && had.source !== source))
            return Promise.resolve(false);
          routes.delete(key);
          return Promise.resolve(true);
        },
      },
      address: clusterServiceAddress,
      events: recorder,
      log: createLogger('claims-test', 'silent'),
    });
    await reconciler.watches.owns?.[0]?.start(() => undefined);
  });
  const reconcile = (ns: string, name: string) => reconciler.reconcile(`${ns}/${name}`);

  it('routes only from a namespace the record names, with the record’s owner, never the label’s', async () => {
    services.put(service('team-a', 'scorer', '2026-01-02T00:00:00Z'));
    await reconcile('team-a', 'scorer');
    expect(routes.size).toBe(0);
    expect(events).toEqual(['team-a/scorer Warning WorkflowNotFound']);

    workflows.put(record(['team-b']));
    await reconcile('team-a', 'scorer');
    expect(routes.size).toBe(0);
    expect(events.at(-1)).toBe('team-a/scorer Warning NamespaceNotAllowed');

    workflows.put(record(['team-b', 'team-a']));
    await reconcile('team-a', 'scorer');
    expect(routes.get(KEY)).toEqual({
      url: 'http://10.96.0.80:80',
      workflow: 'fraud',
      owner: 'alice',
      source: 'service/team-a/scorer',
    });
    expect(events.at(-1)).toBe('team-a/scorer Normal Routed');
  });

  it('across admitted namespaces the oldest claim holds the route; the next takes over when it goes', async () => {
    workflows.put(record(['team-a', 'team-b']));
    services.put(service('team-b', 'newer', '2026-01-03T00:00:00Z'));
    services.put(service('team-a', 'older', '2026-01-02T00:00:00Z'));
    // Reconciled newest first, as a cache may hand them out: the order of events changes nothing.
    await reconcile('team-b', 'newer');
    await reconcile('team-a', 'older');
    expect(routes.get(KEY)?.source).toBe('service/team-a/older');
    expect(events).toContain('team-b/newer Warning RouteClaimedByOlderService');
    // Told once, not on every pass.
    await reconcile('team-b', 'newer');
    expect(events.filter((e) => e.includes('RouteClaimedByOlderService'))).toHaveLength(1);

    services.delete({ namespace: 'team-a', name: 'older' });
    await reconcile('team-a', 'older');
    expect(routes.get(KEY)?.source).toBe('service/team-b/newer');
  });

  it('the record taken away removes the route; of two records for one id, the oldest holds it', async () => {
    workflows.put(record(['team-a']));
    services.put(service('team-a', 'scorer', '2026-01-02T00:00:00Z'));
    await reconcile('team-a', 'scorer');
    expect(routes.get(KEY)?.owner).toBe('alice');
    // A later record claiming the same id for mallory changes nothing.
    workflows.put(record(['team-a'], 'mallory', '2026-02-01T00:00:00Z'));
    await reconcile('team-a', 'scorer');
    expect(routes.get(KEY)?.owner).toBe('alice');

    workflows.delete({ namespace: '', name: 'fraud-alice' });
    workflows.delete({ namespace: '', name: 'fraud-mallory' });
    await reconcile('team-a', 'scorer');
    expect(routes.size).toBe(0);
    expect(reconciler.liveRoutes()).toEqual([]);
  });
});
