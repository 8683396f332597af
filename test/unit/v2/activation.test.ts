import type { Route } from '../../../common/resources/grant.js';
import { resolveRoute } from '../../../gateway/routing/route-table.js';
import type { Activator } from '../../../gateway/v2/activator.js';
import { workflowRuntime } from '../../../gateway/v2/activation.js';

const caller = { identity: undefined, key: 'k1', keyId: 'k1' };
const pod = { url: 'http://10.0.0.7:8080', probe: 'http://10.0.0.7:8080/v2/models/m/ready' };

/** The route stays cold; a held call asks the starting replicas once, and these probes pass. */
function activator(ready: string[]): Pick<Activator, 'hold' | 'firstReady'> & { probed: string[] } {
  const probed: string[] = [];
  return {
    probed,
    hold: async (_model, _version, _timeoutMs, warm) => {
      const found = await warm();
      if (found === undefined) throw new Error('none ready');
      return found;
    },
    firstReady: async (replicas) => {
      probed.push(...replicas.map((r) => r.probe));
      return replicas.find((r) => ready.includes(r.probe));
    },
  };
}

describe('workflowRuntime', () => {
  const routed = { origin: 'http://m-1.models.svc:8080', basePath: '', grantAudience: 'model/models/m' };
  const cold = (extra: Partial<Route> = {}): Route => ({
    url: 'http://m-1.models.svc:8080',
    source: 'model/models/m',
    workflow: 'wf',
    cold: true,
    starting: [{ ...pod, until: Date.now() + 60_000 }],
    versions: [{ name: '1', url: 'http://m-1.models.svc:8080', percent: 100, cold: true }],
    ...extra,
  });

  it("sends a workflow's held call to its model's starting replica, counted as the main version's", async () => {
    const a = activator([pod.probe]);
    const runtime = await workflowRuntime(a, () => resolveRoute(cold()), 'm', 'wf', routed, caller);
    expect(runtime).toEqual({
      origin: pod.url,
      basePath: '',
      grantAudience: 'model/models/m',
      version: '1',
    });
  });

  it('asks nothing of another workflow’s model: its route decides nothing here', async () => {
    const a = activator([pod.probe]);
    const runtime = await workflowRuntime(
      a,
      () => resolveRoute(cold({ workflow: 'other' })),
      'm',
      'wf',
      routed,
      caller,
    );
    expect([runtime, a.probed]).toEqual([routed, []]);
  });
});
