import type { Metered } from '../../../gateway/usage-export/meter.js';
import { RoleCatalogue } from '../../../common/apikey/roles.js';
import { loadGatewayConfig } from '../../../gateway/config.js';
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

describe('a price per row of a model’s batch', () => {
  const priced = (creditCosts: unknown) =>
    loadGatewayConfig({ env: {}, overrides: { creditCosts } as Record<string, unknown> }).creditCosts;

  it('is written {credits, per: row}, or model=N/row in the environment, beside prices per call', () => {
    const both = { 'model-fraud': { credits: 2, per: 'row' }, reports: { credits: 3, per: 'call' } };
    expect(priced({ 'model-fraud': { credits: 2, per: 'row' }, reports: 3 })).toEqual(both);
    expect(
      loadGatewayConfig({ env: { TOLLGATE_CREDIT_COSTS: 'model-fraud=2/row, reports=3' } }).creditCosts,
    ).toEqual(both);
  });

  it('is refused for what is not a model, and for a price that is no whole number of credits', () => {
    expect(() => priced({ reports: { credits: 2, per: 'row' } })).toThrow(
      /only a model's inference is priced per row of its batch, and "reports" is no model name/,
    );
    expect(() => loadGatewayConfig({ env: { TOLLGATE_CREDIT_COSTS: 'model-fraud=1.5/row' } })).toThrow(
      /a cost is a whole number of credits/,
    );
    expect(() => priced({ 'model-fraud': { credits: 2, per: 'batch' } })).toThrow(
      /creditCosts\.model-fraud\.per: a price is per call or per row/,
    );
    expect(() => priced({ 'model-fraud': 'two' })).toThrow(
      /a price is a whole number of credits, or \{credits, per/,
    );
    expect(() => priced({ 'model-fraud': { credits: 0, per: 'row' } })).toThrow(/a cost is at least 1/);
  });

  const spent: Array<[number, string | undefined]> = [];
  const exported: Array<[Metered, number]> = [];
  const admission = new Admission({
    roles: new RoleCatalogue({ resources: [] }),
    creditCosts: new CreditCosts({ 'model-fraud': { credits: 3, per: 'row' } }),
    rateLimiter: {
      take: (_grant, cost = 1, _now, what) => {
        spent.push([cost, what]);
        return Promise.resolve();
      },
    },
    usage: { record: () => undefined },
    meter: { called: (_grant, what, credits) => void exported.push([what, credits]) },
    calls: new CallShares({ perAddress: 1_000, perOwner: 1_000 }),
  });
  const paying: KeyGrant = { ...platformKey, credits: { amount: 10 } };

  it('spends the row’s price times the rows (a call of none pays one), saying what the batch is for a refusal to name', async () => {
    expect(admission.price({ kind: 'model', model: 'model-fraud' }, true)).toEqual({
      credits: 3,
      per: 'row',
    });
    const metered = { kind: 'model', name: 'model-fraud' } as const;
    const charge = { credits: 3, endpoint: 'POST /v2/models/model-fraud', metered };
    await admission.spendRows(paying, charge, 2);
    await admission.spendRows(paying, charge, 0);
    await admission.spendRows(paying, { ...charge, credits: 1 }, 1);
    expect(spent).toEqual([
      [6, 'this batch of 2 rows at 3 credits a row'],
      [3, 'this batch of 1 row at 3 credits a row'],
      [1, 'this batch of 1 row at 1 credit a row'],
    ]);
    // And exported at what each came to, under the model.
    expect(exported).toEqual([
      [metered, 6],
      [metered, 3],
      [metered, 1],
    ]);
  });

  it('leaves a workflow’s inference of the model unspent until its batch is read, and prices its other calls per call', () => {
    const router = new EventsRouter(
      table({
        'model-fraud': {
          url: 'http://10.0.0.1:8080',
          source: 'model/team-a/model-fraud',
          workflow: 'wf',
          owner: 'alice',
        },
      }),
      admission,
      {},
      new Map(),
    );
    const target = router.resolve(
      'POST',
      normalisePath('/events/bda/wf/model-fraud/v2/models/model-fraud/infer'),
      bdaKey,
    ) as EventsTarget;
    expect(target.cost).toBeUndefined();
    expect('inference' in target && target.inference.perRow).toEqual({
      credits: 3,
      endpoint: 'POST /events/bda/wf/model-fraud',
      metered: { kind: 'model', name: 'model-fraud' },
    });
  });
});
