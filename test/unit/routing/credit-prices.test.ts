import { RoleCatalogue } from '../../../common/apikey/roles.js';
import type { KeyGrant, Route } from '../../../common/resources/grant.js';
import { Admission } from '../../../gateway/admission/admission.js';
import { CallShares } from '../../../gateway/admission/call-shares.js';
import { CreditCosts } from '../../../gateway/auth/credit-costs.js';
import { EventsRouter, type EventsTarget } from '../../../gateway/routing/events-router.js';
import { normalisePath } from '../../../gateway/routing/normalise.js';
import { resolveRoute, type RouteTable } from '../../../gateway/routing/route-table.js';

/** A route table holding one workflow's routes, by service. */
const table = (routes: Record<string, Route>): RouteTable =>
  ({
    bda: (_workflow: string, service: string) => (routes[service] ? resolveRoute(routes[service]) : null),
  }) as unknown as RouteTable;

const bdaKey: KeyGrant = { id: 'k', owner: 'alice', module: 'bda', roles: ['wf'] };
const platformKey: KeyGrant = { id: 'p', owner: 'alice', module: 'platform', roles: ['viewer'] };

describe('what a call costs', () => {
  const router = new EventsRouter(
    table({
      'model-fraud': {
        url: 'http://10.0.0.1:8080',
        source: 'model/team-a/model-fraud',
        workflow: 'wf',
        owner: 'alice',
      },
      scorer: {
        url: 'http://10.0.0.2:8080',
        source: 'service/team-a/scorer',
        workflow: 'wf',
        owner: 'alice',
      },
    }),
    new Admission({
      roles: new RoleCatalogue({ resources: ['datasets', 'reports'] }),
      creditCosts: new CreditCosts({ reports: 3, 'model-fraud': 20 }),
      rateLimiter: { take: async () => undefined },
      usage: { record: () => undefined },
      calls: new CallShares({ perAddress: 1_000, perOwner: 1_000 }),
    }),
    { datasets: 'http://10.0.0.3:8080', reports: 'http://10.0.0.4:8080' },
    new Map(),
  );
  const cost = (method: string, url: string, grant: KeyGrant): number | undefined =>
    (router.resolve(method, normalisePath(url), grant) as EventsTarget).cost;

  it('is the administrator’s price of a platform resource, else 1', () => {
    expect(cost('GET', '/events/platform/api/v1/reports/r1', platformKey)).toBe(3);
    expect(cost('GET', '/events/platform/api/v1/datasets', platformKey)).toBe(1);
  });

  it('is a model’s price for its inference through its workflow', () => {
    expect(cost('POST', '/events/bda/wf/model-fraud/v2/models/model-fraud/infer', bdaKey)).toBe(20);
    // Reading its metadata costs what any call does.
    expect(cost('GET', '/events/bda/wf/model-fraud/v2/models/model-fraud', bdaKey)).toBeUndefined();
    // A workflow Service is not priced, whatever its name.
    expect(cost('POST', '/events/bda/wf/scorer/score', bdaKey)).toBeUndefined();
  });
});
