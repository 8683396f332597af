import { RoleCatalogue } from '../../../common/apikey/roles.js';
import type { KeyGrant, Route } from '../../../common/resources/grant.js';
import type { TollgateError } from '../../../common/errors.js';
import { Admission } from '../../../gateway/admission/admission.js';
import { CallShares } from '../../../gateway/admission/call-shares.js';
import { CreditCosts } from '../../../gateway/auth/credit-costs.js';
import { EventsRouter, type EventsTarget } from '../../../gateway/routing/events-router.js';
import { normalisePath } from '../../../gateway/routing/normalise.js';
import { resolveRoute, type RouteTable } from '../../../gateway/routing/route-table.js';

const routes: Record<string, Route> = {
  'model-fraud': {
    url: 'http://10.0.0.1:8080',
    source: 'model/team-a/model-fraud',
    workflow: 'wf',
    owner: 'alice',
  },
  // A team's own Service whose id happens to look like a model's name: proxied as any Service.
  'model-like': {
    url: 'http://10.0.0.2:8080',
    source: 'service/team-a/model-like',
    workflow: 'wf',
    owner: 'alice',
  },
};
const router = new EventsRouter(
  {
    bda: (_w: string, service: string) => (routes[service] ? resolveRoute(routes[service]) : null),
  } as unknown as RouteTable,
  new Admission({
    roles: new RoleCatalogue({ resources: [] }),
    creditCosts: new CreditCosts({}),
    rateLimiter: { take: async () => undefined },
    usage: { record: () => undefined },
    calls: new CallShares({ perAddress: 1_000, perOwner: 1_000 }),
  }),
  {},
  new Map(),
);
const key: KeyGrant = { id: 'k', owner: 'alice', module: 'bda', roles: ['wf'] };
const resolve = (method: string, url: string) =>
  router.resolve(method, normalisePath(url), key) as EventsTarget;
const refusal = (method: string, url: string): TollgateError => {
  try {
    resolve(method, url);
  } catch (err) {
    return err as TollgateError;
  }
  throw new Error(`${method} ${url} was not refused`);
};

describe('a model published as a workflow service', () => {
  it('checks its inference as /v2 does, and passes on its own metadata and readiness', () => {
    expect(resolve('POST', '/events/bda/wf/model-fraud/v2/models/model-fraud/infer')).toMatchObject({
      inference: { model: 'model-fraud', workflow: 'wf' },
    });
    // And its runtime's health, which a V2 client asks of its base URL first.
    for (const path of [
      '/v2/models/model-fraud',
      '/v2/models/model-fraud/ready',
      '/v2/health/live',
      '/v2/health/ready',
    ]) {
      expect(resolve('GET', `/events/bda/wf/model-fraud${path}?x=1`)).toMatchObject({
        proxy: { origin: 'http://10.0.0.1:8080', path: `${path}?x=1` },
      });
    }
  });

  it('sends a version’s calls to /v2, which routes them to that version’s runtime', () => {
    for (const [method, path] of [
      ['POST', '/v2/models/model-fraud/versions/v2/infer'],
      ['GET', '/v2/models/model-fraud/versions/v2/ready'],
      ['GET', '/v2/models/model-fraud/versions/v2'],
    ] as const) {
      const err = refusal(method, `/events/bda/wf/model-fraud${path}`);
      expect([err.status, err.code]).toEqual([404, 'unknown_endpoint']);
      expect(err.message).toMatch(
        /^a version of "model-fraud" is called at \/v2\/models\/model-fraud\/versions\/v2\/\.\.\., with the same key/,
      );
    }
  });

  it.each([
    ['POST', '/v2/models/model-other/infer'],
    ['GET', '/v2/models/model-other'],
    ['POST', '/v2/repository/models/model-fraud/unload'],
    ['POST', '/v2/repository/index'],
    ['GET', '/v2/health/started'],
    ['GET', '/v2'],
    ['GET', '/metrics'],
    ['GET', '/'],
    ['POST', '/v2/models/model-fraud/infer/extra'],
  ])('answers nothing else of its runtime: %s %s', (method, path) => {
    const err = refusal(method, `/events/bda/wf/model-fraud${path}`);
    expect([err.status, err.code]).toEqual([404, 'unknown_endpoint']);
    expect(err.message).toContain(
      '"model-fraud" is a model: call its V2 endpoints under /events/bda/<bda-id>/model-fraud/',
    );
  });

  it('answers 405 with Allow for the wrong method', () => {
    const infer = refusal('GET', '/events/bda/wf/model-fraud/v2/models/model-fraud/infer');
    expect([infer.status, infer.code, infer.headers]).toEqual([405, 'method_not_allowed', { allow: 'POST' }]);
    const meta = refusal('DELETE', '/events/bda/wf/model-fraud/v2/models/model-fraud');
    expect([meta.status, meta.headers]).toEqual([405, { allow: 'GET' }]);
    const health = refusal('POST', '/events/bda/wf/model-fraud/v2/health/live');
    expect([health.status, health.code, health.headers]).toEqual([
      405,
      'method_not_allowed',
      { allow: 'GET' },
    ]);
  });

  it('leaves a Service’s own paths alone, whatever its name', () => {
    expect(resolve('POST', '/events/bda/wf/model-like/v2/repository/index')).toMatchObject({
      proxy: { origin: 'http://10.0.0.2:8080', path: '/v2/repository/index' },
    });
  });
});
