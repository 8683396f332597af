import { RoleCatalogue } from '../../../common/apikey/roles.js';
import { TollgateError } from '../../../common/errors.js';
import type { KeyGrant, Route } from '../../../common/resources/grant.js';
import { Admission } from '../../../gateway/admission/admission.js';
import { CallShares } from '../../../gateway/admission/call-shares.js';
import { CreditCosts } from '../../../gateway/auth/credit-costs.js';
import { EventsRouter } from '../../../gateway/routing/events-router.js';
import { normalisePath } from '../../../gateway/routing/normalise.js';
import { resolveRoute, type RouteTable } from '../../../gateway/routing/route-table.js';
import { modelSidecarPlacement, workflowResolver } from '../../../gateway/sidecar/sidecar.js';
import { ModelAccess, type V2Placement } from '../../../gateway/v2/access.js';
import type { ModelDirectory } from '../../../gateway/v2/model-directory.js';
import type { V2Call } from '../../../gateway/v2/endpoint.js';

/**
 * One admission decision, asked by every entry: each row is a key and what it calls, each entry
 * that can carry the call is asked, and every entry must give the same decision (a refusal's code
 * and status, or admitted). Adding a rule to gateway/admission/admission.ts is a row here.
 *
 * The entries: REST `/events/bda/...` (the events router), a workflow's sidecar (its resolver),
 * REST `/v2/...` at the central gateway and a model's sidecar (V2 access over each placement).
 * gRPC calls reach the same V2 access (gateway/grpc/server.ts), so its rows are the `/v2` rows.
 */
const WORKFLOW = 'wf';
const MODEL = 'model-fraud';
const NAMESPACE = 'team-a';

const routes: Record<string, Route> = {
  svc: {
    url: 'http://10.0.0.2:8080',
    source: `service/${NAMESPACE}/svc`,
    workflow: WORKFLOW,
    owner: 'alice',
  },
  [MODEL]: {
    url: 'http://10.0.0.1:8080',
    source: `model/${NAMESPACE}/${MODEL}`,
    workflow: WORKFLOW,
    owner: 'alice',
  },
};
const table = {
  bda: (_workflow: string, service: string) => (routes[service] ? resolveRoute(routes[service]) : null),
  model: (name: string) => (routes[name] ? resolveRoute(routes[name]) : null),
} as unknown as RouteTable;

/** The limiter refuses keys that have a limit named `exhausted`. */
// 'crowded' already has its share of calls in flight on this replica (held for the whole run).
const calls = new CallShares({ perAddress: 1_000, perOwner: 1_000 });
for (let i = 0; i < 1_000; i++) calls.enterOwner('crowded');
const admission = new Admission({
  roles: new RoleCatalogue({ resources: ['datasets'] }),
  creditCosts: new CreditCosts({}),
  rateLimiter: {
    take: async (grant) => {
      if (grant.limits?.some((l) => l.name === 'exhausted'))
        throw new TollgateError('rate_limited', 'over the limit');
    },
  },
  usage: { record: () => undefined },
  calls,
});

type Outcome = 'admitted' | [number, string];

async function outcome(decide: () => unknown): Promise<Outcome> {
  try {
    await decide();
    return 'admitted';
  } catch (err) {
    if (!(err instanceof TollgateError)) throw err;
    return [err.status, err.code];
  }
}

/** A V2 call as an entry gives it to the core; its slot is taken as REST takes it, and held for the test's length. */
const v2Call = (): V2Call => ({
  head: { method: 'POST', headers: {}, rawHeaders: [], socket: {} },
  requestId: 'r1',
  query: '',
  holdSlot: (grant) => void admission.enter(grant),
});

const workflowEntries: Record<string, (grant: KeyGrant) => unknown> = {
  'REST /events/bda': (grant) =>
    new EventsRouter(table, admission, {}, new Map()).resolve(
      'GET',
      normalisePath(`/events/bda/${WORKFLOW}/svc/hello`),
      grant,
    ),
  'a workflow’s sidecar': (grant) =>
    workflowResolver(
      {
        kind: 'workflow',
        upstream: new URL('http://127.0.0.1:8081'),
        workflow: WORKFLOW,
        service: 'svc',
        namespace: NAMESPACE,
      },
      table,
      admission,
    )('GET', normalisePath('/hello'), grant),
};

const access = (directory: ModelDirectory, placement: V2Placement) =>
  new ModelAccess(
    {
      admission,
      refused: () => undefined,
      activator: { hold: async () => ({}), firstReady: async () => undefined },
    },
    directory,
    placement,
  );

const modelEntries: Record<string, (grant: KeyGrant) => unknown> = {
  'REST /v2 (and gRPC)': (grant) =>
    access(
      {
        find: async (name) => (name === MODEL ? { workflow: WORKFLOW } : undefined),
        list: async () => [{ name: MODEL, workflow: WORKFLOW }],
      },
      { authenticate: () => grant, modelRoute: (name) => table.model(name) },
    ).authorised(grant, v2Call(), MODEL, { version: undefined, split: true }),
  'a model’s sidecar': (grant) => {
    const { directory, placement } = modelSidecarPlacement(
      table,
      {
        kind: 'model',
        upstream: new URL('http://127.0.0.1:8082'),
        model: MODEL,
        workflow: WORKFLOW,
        namespace: NAMESPACE,
      },
      () => grant,
    );
    return access(directory, placement).authorised(grant, v2Call(), MODEL, {
      version: undefined,
      split: true,
    });
  },
};

const key = (g: Partial<KeyGrant>): KeyGrant => ({
  id: 'k',
  owner: 'alice',
  module: 'bda',
  roles: [WORKFLOW],
  ...g,
});
const exhausted = { limits: [{ name: 'exhausted', requests: 1, windowSeconds: 60 }] };

const workflowRows: Array<[string, KeyGrant, Outcome]> = [
  ['the owner’s bda key of the workflow', key({}), 'admitted'],
  ['a platform key', key({ module: 'platform', roles: ['editor'] }), [403, 'module_mismatch']],
  ['a bda key of another workflow', key({ roles: ['other'] }), [403, 'workflow_not_allowed']],
  ['a bda key with a second role', key({ roles: [WORKFLOW, 'other'] }), [403, 'workflow_not_allowed']],
  ['a bda key its former owner made', key({ owner: 'mallory' }), [403, 'workflow_not_owned']],
];

const modelRows: Array<[string, KeyGrant, Outcome]> = [
  ['an inference key', key({ module: 'platform', roles: ['models:inference'] }), 'admitted'],
  ['an editor key', key({ module: 'platform', roles: ['editor'] }), 'admitted'],
  [
    'a key whose scope names the model',
    key({ module: 'platform', roles: ['models:inference'], models: ['model-f*'] }),
    'admitted',
  ],
  ['a viewer key', key({ module: 'platform', roles: ['viewer'] }), [403, 'model_access_denied']],
  [
    'a key scoped to other models',
    key({ module: 'platform', roles: ['models:inference'], models: ['model-iris'] }),
    [403, 'model_not_in_key_scope'],
  ],
  ['the owner’s bda key of the model’s workflow', key({}), 'admitted'],
  ['a bda key of another workflow', key({ roles: ['other'] }), [403, 'model_access_denied']],
  ['a bda key with a second role', key({ roles: [WORKFLOW, 'other'] }), [403, 'model_access_denied']],
  ['a bda key its former owner made', key({ owner: 'mallory' }), [403, 'workflow_not_owned']],
  [
    'an inference key past its limit',
    key({ module: 'platform', roles: ['models:inference'], ...exhausted }),
    [429, 'rate_limited'],
  ],
  ['a bda key past its limit', key({ ...exhausted }), [429, 'rate_limited']],
  [
    'a key whose owner has their share of calls in flight',
    key({ module: 'platform', roles: ['models:inference'], owner: 'crowded' }),
    [429, 'too_many_calls'],
  ],
];

describe('one admission decision at every entry', () => {
  describe.each(workflowRows)('a workflow’s service, called with %s', (_name, grant, expected) => {
    test.each(Object.keys(workflowEntries))('%s', async (entry) => {
      expect(await outcome(() => workflowEntries[entry]!(grant))).toEqual(expected);
    });
  });
  describe.each(modelRows)('a model, called with %s', (_name, grant, expected) => {
    test.each(Object.keys(modelEntries))('%s', async (entry) => {
      expect(await outcome(() => modelEntries[entry]!(grant))).toEqual(expected);
    });
  });

  test('a model’s sidecar believes the route of its own namespace’s Model only, as the central gateway does', async () => {
    const theirs: Record<string, Route> = {
      ...routes,
      [MODEL]: { ...routes[MODEL]!, source: `model/elsewhere/${MODEL}` },
    };
    const elsewhere = {
      model: (name: string) => (theirs[name] ? resolveRoute(theirs[name]) : null),
    } as unknown as RouteTable;
    const { directory, placement } = modelSidecarPlacement(
      elsewhere,
      {
        kind: 'model',
        upstream: new URL('http://127.0.0.1:8082'),
        model: MODEL,
        workflow: WORKFLOW,
        namespace: NAMESPACE,
      },
      () => key({}),
    );
    expect(
      await outcome(() =>
        access(directory, placement).authorised(key({}), v2Call(), MODEL, {
          version: undefined,
          split: true,
        }),
      ),
    ).toEqual([403, 'model_access_denied']);
  });
});
