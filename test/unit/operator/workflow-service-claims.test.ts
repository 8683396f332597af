import type { Route } from '../../../common/resources/grant.js';
import type { Workflow } from '../../../common/resources/workflow.js';
import type { WorkflowService } from '../../../common/resources/workflow-service.js';
import { createLogger } from '../../../common/logger.js';
import type { EventRecorder } from '../../../operator/events.js';
import { parseRefKey, refKey } from '../../../operator/framework/resource-source.js';
import { Held } from './held-source.js';
import {
  clusterServiceAddress,
  WorkflowServiceReconciler,
} from '../../../operator/controllers/workflow-service-controller.js';
import { WorkflowAdmission } from '../../../operator/workflows/workflow-admission.js';
import { ROUTE_FINALIZER, type RouteHold } from '../../../operator/route-hold.js';
import { aWorkflow } from '../../builders/resources.js';

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
const record = (namespaces: string[], owner = 'alice', created = '2026-01-01T00:00:00Z'): Workflow =>
  aWorkflow('fraud', owner, namespaces, { name: `fraud-${owner}`, creationTimestamp: created });

describe('workflow service claims (the operator’s admission and conflict rules)', () => {
  const KEY = 'tg:route:bda:fraud:scorer';
  let services: Held<WorkflowService>;
  let workflows: Held<Workflow>;
  let routes: Map<string, Route>;
  let events: string[];
  /** What each Event said, by the object told. */
  let said: Map<string, string>;
  let reconciler: WorkflowServiceReconciler;
  /** Route writes and finalizer changes, in the order they reached Redis and the API server. */
  let journal: string[];
  /** What the API server says: which Services are being deleted, which carry the finalizer. */
  let server: { deleting: Set<string>; held: Set<string>; labels: Map<string, Record<string, string>> };

  /** As the API server does: no finalizer added to a Service gone or being deleted. */
  const hold: RouteHold = {
    hold: (svc) => {
      const key = `${svc.metadata?.namespace ?? ''}/${svc.metadata?.name ?? ''}`;
      if (!services.items.has(key) || server.deleting.has(key)) return Promise.resolve(false);
      if (!server.held.has(key)) journal.push(`hold ${key}`);
      server.held.add(key);
      return Promise.resolve(true);
    },
    release: (ref) => {
      if (server.held.delete(refKey(ref))) journal.push(`release ${refKey(ref)}`);
      return Promise.resolve();
    },
    strays: (seen) =>
      Promise.resolve(
        [...server.held]
          .map(parseRefKey)
          .filter(
            (ref) => !seen({ metadata: { ...ref, labels: server.labels.get(refKey(ref)) ?? {} } }, ref),
          ),
      ),
  };

  /** The informer's copy catching up with the server's finalizers. */
  const refresh = () => {
    for (const [key, svc] of services.items) {
      const finalizers = server.held.has(key) ? [ROUTE_FINALIZER] : [];
      services.items.set(key, { ...svc, metadata: { ...svc.metadata, finalizers } });
    }
  };
  /** `kubectl delete`: with the finalizer on, the Service stays, marked, until it comes off. */
  const markDeleted = (ns: string, name: string) => {
    const key = `${ns}/${name}`;
    server.deleting.add(key);
    const svc = services.items.get(key);
    if (svc)
      services.put({ ...svc, metadata: { ...svc.metadata, deletionTimestamp: '2026-03-01T00:00:00Z' } });
  };

  beforeEach(async () => {
    services = new Held();
    workflows = new Held();
    routes = new Map();
    events = [];
    said = new Map();
    journal = [];
    server = { deleting: new Set(), held: new Set(), labels: new Map() };
    reconciler = await build();
  });

  /** An operator process: a fresh one knows nothing of what an earlier one wrote. */
  async function build(): Promise<WorkflowServiceReconciler> {
    const recorder: EventRecorder = {
      record: (obj, type, reason, message) => {
        events.push(`${obj.metadata.namespace ?? ''}/${obj.metadata.name} ${type} ${reason}`);
        said.set(`${obj.metadata.namespace ?? ''}/${obj.metadata.name}`, message);
        return Promise.resolve();
      },
    };
    const remove = (key: string, source: string | undefined): Promise<boolean> => {
      const had = routes.get(key);
      if (had === undefined || (source !== undefined && had.source !== source)) return Promise.resolve(false);
      routes.delete(key);
      journal.push(`remove ${had.source ?? ''}`);
      return Promise.resolve(true);
    };
    const built = new WorkflowServiceReconciler({
      services,
      workflows: new WorkflowAdmission(workflows),
      routes: {
        put: (key, route) => {
          if (JSON.stringify(routes.get(key)) !== JSON.stringify(route))
            journal.push(`put ${route.source ?? ''}`);
          routes.set(key, route);
          return Promise.resolve(true);
        },
        // As the Redis script does: only the writer's own route.
        remove,
        sourceAt: (key) => Promise.resolve(routes.get(key)?.source),
        removeAllOf: async (source) => {
          let n = 0;
          for (const key of [...routes.keys()]) if (await remove(key, source)) n++;
          return n;
        },
      },
      hold,
      address: clusterServiceAddress,
      events: recorder,
      log: createLogger('claims-test', 'silent'),
    });
    await built.watches.owns?.[0]?.start(() => undefined);
    await services.start((ref, gone) => {
      if (gone) built.watches.onDeleted?.(ref, gone);
    });
    return built;
  }
  const reconcile = (ns: string, name: string) => reconciler.reconcile(`${ns}/${name}`);

  it('routes only from a namespace the record names, with the record’s owner, never the label’s', async () => {
    services.put(service('team-a', 'scorer', '2026-01-02T00:00:00Z'));
    await reconcile('team-a', 'scorer');
    expect(routes.size).toBe(0);
    expect(events).toEqual(['team-a/scorer Warning WorkflowNotAdmitted']);

    workflows.put(record(['team-b']));
    await reconcile('team-a', 'scorer');
    expect(routes.size).toBe(0);
    expect(events.at(-1)).toBe('team-a/scorer Warning WorkflowNotAdmitted');

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

  it('a Service never claims a Model’s name: the Model’s workflow route stays the Model’s', async () => {
    workflows.put(record(['team-a', 'team-b']));
    const modelRoute: Route = {
      url: 'http://10.96.0.9:80',
      workflow: 'fraud',
      owner: 'alice',
      source: 'model/team-a/model-scorer',
    };
    routes.set('tg:route:bda:fraud:model-scorer', modelRoute);
    const squatter = service('team-b', 'squatter', '2026-01-02T00:00:00Z');
    const labels = { ...squatter.metadata.labels, 'tollgate.dev/service': 'model-scorer' };
    services.put({ ...squatter, metadata: { ...squatter.metadata, labels } });
    await reconcile('team-b', 'squatter');
    expect(routes.get('tg:route:bda:fraud:model-scorer')).toEqual(modelRoute);
    expect(journal).toEqual([]);
    expect(events).toEqual(['team-b/squatter Warning ServiceIdReserved']);
    expect(said.get('team-b/squatter')).toMatch(/does not start with 'model-'/);
    // Labelled with a service id of its own, it is routed as any other.
    services.put(service('team-b', 'squatter', '2026-01-02T00:00:00Z'));
    await reconcile('team-b', 'squatter');
    expect(routes.get(KEY)?.source).toBe('service/team-b/squatter');
    expect(routes.get('tg:route:bda:fraud:model-scorer')).toEqual(modelRoute);
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
    // Another team's Service is not named to this one.
    expect(said.get('team-b/newer')).toMatch(/^a Service in another namespace claimed workflow 'fraud'/);
    expect(said.get('team-b/newer')).not.toContain('team-a');
    // Told once, not on every pass.
    await reconcile('team-b', 'newer');
    expect(events.filter((e) => e.includes('RouteClaimedByOlderService'))).toHaveLength(1);

    services.delete({ namespace: 'team-a', name: 'older' });
    await reconcile('team-a', 'older');
    expect(routes.get(KEY)?.source).toBe('service/team-b/newer');
  });

  it('an older Service labelled later does not take a held route: the holder keeps it, after a restart too', async () => {
    workflows.put(record(['team-a', 'team-b']));
    services.put(service('team-a', 'scorer', '2026-01-05T00:00:00Z'));
    await reconcile('team-a', 'scorer');
    expect(routes.get(KEY)?.source).toBe('service/team-a/scorer');
    // team-b labels a Service it made long before: the claim is new, whatever the Service's age.
    services.put(service('team-b', 'old', '2026-01-01T00:00:00Z'));
    await reconcile('team-b', 'old');
    await reconcile('team-a', 'scorer');
    expect(routes.get(KEY)?.source).toBe('service/team-a/scorer');
    expect(events).toContain('team-b/old Warning RouteClaimedByOlderService');
    expect(server.held.has('team-b/old')).toBe(false);
    // A new operator process learns the holder from the route itself.
    reconciler = await build();
    await reconcile('team-b', 'old');
    await reconcile('team-a', 'scorer');
    expect(routes.get(KEY)?.source).toBe('service/team-a/scorer');
    // The holder gone, the claimant left takes the route.
    services.delete({ namespace: 'team-a', name: 'scorer' });
    await reconcile('team-a', 'scorer');
    expect(routes.get(KEY)?.source).toBe('service/team-b/old');
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

  describe('the route finalizer (a deleted Service keeps its cluster IP until no route names it)', () => {
    beforeEach(() => workflows.put(record(['team-a', 'team-b'])));

    it('goes on before the route is written, and comes off only after the route is gone', async () => {
      services.put(service('team-a', 'scorer', '2026-01-02T00:00:00Z'));
      await reconcile('team-a', 'scorer');
      expect(journal).toEqual(['hold team-a/scorer', 'put service/team-a/scorer']);
      refresh();
      // Reconciled again: nothing changes.
      await reconcile('team-a', 'scorer');
      expect(journal).toHaveLength(2);

      markDeleted('team-a', 'scorer');
      await reconcile('team-a', 'scorer');
      expect(journal.slice(2)).toEqual(['remove service/team-a/scorer', 'release team-a/scorer']);
      expect(routes.size).toBe(0);
      expect(reconciler.liveRoutes()).toEqual([]);
    });

    it('the next claimant takes the route over from one being deleted, which is released after', async () => {
      services.put(service('team-a', 'older', '2026-01-02T00:00:00Z'));
      services.put(service('team-b', 'newer', '2026-01-03T00:00:00Z'));
      await reconcile('team-a', 'older');
      await reconcile('team-b', 'newer');
      refresh();
      expect(journal).toEqual(['hold team-a/older', 'put service/team-a/older']);

      markDeleted('team-a', 'older');
      await reconcile('team-a', 'older');
      expect(journal.slice(2)).toEqual([
        'hold team-b/newer',
        'put service/team-b/newer',
        'release team-a/older',
      ]);
      expect(routes.get(KEY)?.source).toBe('service/team-b/newer');
    });

    it('after a restart, a Service deleted meanwhile has its route taken back before its finalizer', async () => {
      services.put(service('team-a', 'scorer', '2026-01-02T00:00:00Z'));
      await reconcile('team-a', 'scorer');
      refresh();
      markDeleted('team-a', 'scorer');
      // A new operator process: it never wrote this route and knows no claim.
      const restarted = await build();
      await restarted.reconcile('team-a/scorer');
      expect(journal.slice(2)).toEqual(['remove service/team-a/scorer', 'release team-a/scorer']);
      expect(routes.size).toBe(0);
    });

    it('a Service whose labels come off, or whose namespace the record drops, is released once unrouted', async () => {
      services.put(service('team-a', 'scorer', '2026-01-02T00:00:00Z'));
      await reconcile('team-a', 'scorer');
      refresh();
      // Its labels taken off: it leaves the informer's view (a deletion to the watch).
      services.delete({ namespace: 'team-a', name: 'scorer' });
      await reconcile('team-a', 'scorer');
      expect(journal.slice(2)).toEqual(['remove service/team-a/scorer', 'release team-a/scorer']);

      services.put(service('team-b', 'scorer', '2026-01-05T00:00:00Z'));
      await reconcile('team-b', 'scorer');
      refresh();
      expect(journal.slice(4)).toEqual(['hold team-b/scorer', 'put service/team-b/scorer']);
      workflows.put(record(['team-a']));
      await reconcile('team-b', 'scorer');
      expect(journal.slice(6)).toEqual(['remove service/team-b/scorer', 'release team-b/scorer']);
      expect(events.at(-1)).toBe('team-b/scorer Warning WorkflowNotAdmitted');
    });

    it('after a restart, a Service relabelled meanwhile has its old route removed before its finalizer', async () => {
      services.put(service('team-a', 'older', '2026-01-02T00:00:00Z'));
      await reconcile('team-a', 'older');
      services.put(service('team-b', 'scorer', '2026-01-03T00:00:00Z', 'churn'));
      workflows.put({
        ...record(['team-b']),
        metadata: { name: 'churn-x', creationTimestamp: '2026-01-01T00:00:00Z' },
        spec: { workflow: 'churn', owner: 'carol', namespaces: ['team-b'] },
      });
      await reconcile('team-b', 'scorer');
      refresh();
      expect([...routes.keys()].sort()).toEqual(['tg:route:bda:churn:scorer', KEY]);
      // While no operator ran, team-b's Service was relabelled to alice's workflow service, which
      // team-a's holds: refused there, it would be released with its churn route still standing.
      const relabelled = services.items.get('team-b/scorer');
      services.items.set('team-b/scorer', {
        ...relabelled!,
        metadata: {
          ...relabelled!.metadata,
          labels: { ...relabelled!.metadata.labels, 'tollgate.dev/workflow': 'fraud' },
        },
      });
      const restarted = await build();
      journal = [];
      await restarted.reconcile('team-b/scorer');
      expect(journal).toEqual(['remove service/team-b/scorer', 'release team-b/scorer']);
      expect([...routes.keys()]).toEqual([KEY]);
      expect(routes.get(KEY)?.source).toBe('service/team-a/older');
    });

    it('after a restart, a Service unlabelled meanwhile is released by the rebuild’s sweep, its route gone first', async () => {
      services.put(service('team-a', 'scorer', '2026-01-02T00:00:00Z'));
      await reconcile('team-a', 'scorer');
      refresh();
      // Unlabelled while no operator ran: the new one's informer never shows it.
      services.items.delete('team-a/scorer');
      const restarted = await build();
      journal = [];
      expect(await restarted.sweepStale()).toBe(1);
      expect(journal).toEqual(['remove service/team-a/scorer', 'release team-a/scorer']);
      expect(routes.size).toBe(0);
    });

    it('a settle that fails is tried again from the route it had not settled', async () => {
      services.put(service('team-a', 'scorer', '2026-01-02T00:00:00Z'));
      await reconcile('team-a', 'scorer');
      refresh();
      // Its labels taken off while Redis is down: the removal fails, the reconcile is retried.
      services.delete({ namespace: 'team-a', name: 'scorer' });
      const failing = reconciler as unknown as { deps: { routes: { remove: unknown } } };
      const remove = failing.deps.routes.remove;
      failing.deps.routes.remove = () => Promise.reject(new Error('redis down'));
      await expect(reconcile('team-a', 'scorer')).rejects.toThrow('redis down');
      expect(server.held.has('team-a/scorer')).toBe(true);
      failing.deps.routes.remove = remove;
      await reconcile('team-a', 'scorer');
      expect(journal.slice(2)).toEqual(['remove service/team-a/scorer', 'release team-a/scorer']);
      expect(routes.size).toBe(0);
    });

    it('a Model’s Service labelled as a workflow service gets no route, is told why, and keeps the Model’s finalizer', async () => {
      const labels = {
        ...service('team-a', 'm', '2026-01-02T00:00:00Z').metadata.labels,
        'app.kubernetes.io/managed-by': 'tollgate',
        'tollgate.dev/model': 'm',
      };
      const modelService = service('team-a', 'm', '2026-01-02T00:00:00Z');
      server.held.add('team-a/m');
      server.labels.set('team-a/m', labels);
      services.put({ ...modelService, metadata: { ...modelService.metadata, labels } });
      refresh();
      await reconcile('team-a', 'm');
      expect(routes.size).toBe(0);
      expect(events).toEqual(['team-a/m Warning ModelService']);
      expect(said.get('team-a/m')).toMatch(/routed as that Model; label a Service of your own/);
      // Its workflow labels taken off, or a rebuild's sweep: the finalizer stays the Model's.
      services.delete({ namespace: 'team-a', name: 'm' });
      await reconcile('team-a', 'm');
      expect(await (await build()).sweepStale()).toBe(0);
      expect(journal).toEqual([]);
      expect(server.held.has('team-a/m')).toBe(true);
    });

    it('labels that name no model make no Model’s Service: such a Service is routed, and released, as any other', async () => {
      const plain = service('team-a', 'scorer', '2026-01-02T00:00:00Z');
      const labels = {
        ...plain.metadata.labels,
        'app.kubernetes.io/managed-by': 'tollgate',
        'tollgate.dev/model': '',
      };
      services.put({ ...plain, metadata: { ...plain.metadata, labels } });
      await reconcile('team-a', 'scorer');
      expect(journal).toEqual(['hold team-a/scorer', 'put service/team-a/scorer']);
      refresh();
      markDeleted('team-a', 'scorer');
      await reconcile('team-a', 'scorer');
      expect(journal.slice(2)).toEqual(['remove service/team-a/scorer', 'release team-a/scorer']);
    });

    it('a Service the API server already deletes gets no route; the next claimant does', async () => {
      services.put(service('team-a', 'older', '2026-01-02T00:00:00Z'));
      services.put(service('team-b', 'newer', '2026-01-03T00:00:00Z'));
      // Deleted before the informer said so: the finalizer cannot be added.
      server.deleting.add('team-a/older');
      await reconcile('team-a', 'older');
      expect(journal).toEqual(['hold team-b/newer', 'put service/team-b/newer']);
    });
  });
});
