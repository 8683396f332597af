import type { CallHead } from '../../../gateway/http/call-head.js';
import type { V2Call } from '../../../gateway/v2/endpoint.js';
import type { VersionWanted } from '../../../gateway/v2/versions.js';
import { RoleCatalogue } from '../../../common/apikey/roles.js';
import { TollgateError } from '../../../common/errors.js';
import type { KeyGrant, Route } from '../../../common/resources/grant.js';
import { moduleOf } from '../../../gateway/http/call-module.js';
import { resolveRoute, type ResolvedRoute } from '../../../gateway/routing/route-table.js';
import { Admission } from '../../../gateway/admission/admission.js';
import { CallShares } from '../../../gateway/admission/call-shares.js';
import { CreditCosts } from '../../../gateway/auth/credit-costs.js';
import { ModelAccess, type AccessServices } from '../../../gateway/v2/access.js';
import type { ModelInfo } from '../../../gateway/v2/model-directory.js';

/** The access checks with fakes for the key check, route table, directory and counters. */
function setup(
  opts: {
    routes?: Record<string, Route>;
    models?: Record<string, ModelInfo>;
    /**
     * The route stays cold and the held call asks its starting replicas once: these probes pass
     * (the operator's part has not reached the route yet).
     */
    readyProbes?: string[];
    /** Routes written since the table remembered them as missing: found only when asked again. */
    writtenSince?: Record<string, Route>;
  } = {},
) {
  const routes = new Map<string, ResolvedRoute>(
    Object.entries(opts.routes ?? {}).map(([name, route]) => [name, resolveRoute(route)]),
  );
  const models = opts.models ?? {};
  const seen = {
    usage: [] as string[],
    refused: [] as string[],
    held: [] as string[],
    probed: [] as string[],
    /** The models the directory was asked for. */
    found: [] as string[],
    /** The routes asked for again past a remembered miss. */
    rechecked: [] as string[],
    limited: false,
  };
  let grant: KeyGrant = { id: 'k1', owner: 'alice', module: 'platform', roles: ['models:inference'] };
  const services: AccessServices = {
    admission: new Admission({
      roles: new RoleCatalogue(),
      creditCosts: new CreditCosts({}),
      rateLimiter: {
        take: async () => {
          if (seen.limited) throw new TollgateError('rate_limited', 'over the limit');
        },
      },
      usage: { record: (id, endpoint) => void seen.usage.push(`${id} ${endpoint}`) },
      calls: new CallShares({ perAddress: 1_000, perOwner: 1_000 }),
    }),
    refused: (g, code) => void seen.refused.push(`${g.id} ${code}`),
    activator: {
      // The operator's part, played at once: the held model's route turns warm.
      hold: async (model, version, _timeoutMs, warm) => {
        seen.held.push(`${model}|${version}`);
        if (opts.readyProbes !== undefined) {
          const found = await warm();
          if (found === undefined) throw new TollgateError('model_scaling_up', 'none ready in time');
          return found;
        }
        const cold = routes.get(model);
        if (cold !== undefined) routes.set(model, resolveRoute({ ...cold.route, cold: false }));
        return {};
      },
      firstReady: async (replicas) => {
        seen.probed.push(...replicas.map((r) => r.probe));
        return replicas.find((r) => opts.readyProbes?.includes(r.probe));
      },
    },
  };
  const access = new ModelAccess(
    services,
    {
      find: async (name) => {
        seen.found.push(name);
        return models[name];
      },
      list: async () => Object.entries(models).map(([name, info]) => ({ name, ...info })),
    },
    {
      authenticate: () => grant,
      modelRoute: (name, recheck) => {
        const written = opts.writtenSince?.[name];
        if (recheck !== true || written === undefined) return routes.get(name) ?? null;
        seen.rechecked.push(name);
        return resolveRoute(written);
      },
    },
  );
  return {
    access,
    seen,
    as(g: Partial<KeyGrant>) {
      grant = { ...grant, ...g };
    },
  };
}

const req = (): CallHead => ({ method: 'POST', headers: {}, rawHeaders: [], socket: {} });

/** As the REST endpoints ask: the key, then the model (the call's slot is not counted here). */
async function authorised(access: ModelAccess, model: string, want: VersionWanted, head: CallHead = req()) {
  const grant = await access.authenticate(head);
  return { grant, ...(await access.authorised(grant, v2Call(head), model, want)) };
}

const v2Call = (head: CallHead = req()): V2Call => ({
  head,
  requestId: 'r1',
  query: '',
  holdSlot: () => undefined,
});

const callable = async (access: ModelAccess) =>
  access.callableModels(await access.authenticate(req()), v2Call(), '/v2/models');

async function refusal(p: Promise<unknown>): Promise<[number, string, string]> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof TollgateError)) throw new Error(`expected a refusal, got ${String(err)}`);
  return [err.status, err.code, err.message];
}

const route = (extra: Partial<Route> = {}): Route => ({
  url: 'http://runtime.models.svc:8080/prefix',
  source: 'model/models/model-a',
  ...extra,
});

describe('ModelAccess', () => {
  it('gives an inference key the runtime, counts the call and notes the module', async () => {
    const t = setup({ routes: { 'model-a': route() }, models: { 'model-a': { workflow: undefined } } });
    const call = req();
    const { grant, runtime } = await authorised(
      t.access,
      'model-a',
      { version: undefined, split: true },
      call,
    );
    expect(grant.id).toBe('k1');
    expect(runtime).toEqual({ origin: 'http://runtime.models.svc:8080', basePath: '/prefix' });
    expect(t.seen.usage).toEqual(['k1 POST /v2/models/model-a']);
    expect(moduleOf(call)).toBe('platform');
  });

  it('refuses a platform key whose roles do not allow inference, as a noted refusal', async () => {
    const t = setup({ routes: { 'model-a': route() } });
    t.as({ roles: ['models:viewer'] });
    const [status, code, message] = await refusal(
      authorised(t.access, 'model-a', { version: undefined, split: true }),
    );
    expect([status, code]).toEqual([403, 'model_access_denied']);
    expect(message).toMatch(/models:viewer.*do not allow model inference/);
    expect(t.seen.refused).toEqual(['k1 model_access_denied']);
    expect(t.seen.usage).toEqual([]);
  });

  it('lets a bda key call its own workflow’s model only, signed for the sidecar’s audience', async () => {
    const t = setup({
      routes: {
        'model-mine': route({ workflow: 'wf-a', grantAudience: 'model/models/model-mine' }),
        'model-theirs': route({ workflow: 'wf-b' }),
        'model-none': route(),
      },
    });
    t.as({ module: 'bda', roles: ['wf-a'] });
    const { runtime } = await authorised(t.access, 'model-mine', {
      version: undefined,
      split: true,
    });
    expect(runtime.grantAudience).toBe('model/models/model-mine');
    const theirs = await refusal(authorised(t.access, 'model-theirs', { version: undefined, split: true }));
    expect(theirs.slice(0, 2)).toEqual([403, 'model_access_denied']);
    expect(theirs[2]).toMatch(
      /^this key is for workflow 'wf-a', and no model 'model-theirs' of that workflow is served/,
    );
    // A model of no workflow, and one that does not exist, are refused in the same words: the
    // key learns neither whether a model exists nor whose workflow it serves.
    const said = (m: string) => (theirs[2] as string).replace('model-theirs', m);
    const none = await refusal(authorised(t.access, 'model-none', { version: undefined, split: true }));
    expect(none).toEqual([403, 'model_access_denied', said('model-none')]);
    const absent = await refusal(authorised(t.access, 'model-absent', { version: undefined, split: true }));
    expect(absent).toEqual([403, 'model_access_denied', said('model-absent')]);
    // Each refusal asked the directory, as one for a model that is not there must: no refusal is
    // quicker than another, nor answered while the directory cannot be read.
    expect(t.seen.found).toEqual(['model-theirs', 'model-none', 'model-absent']);
  });

  it('tells a name that is no model, a model that does not exist and one not ready apart', async () => {
    const t = setup({ models: { 'model-known': { workflow: undefined, versions: ['1', '2'] } } });
    const want = { version: undefined, split: true };
    expect((await refusal(authorised(t.access, 'not-a-model', want))).slice(0, 2)).toEqual([
      404,
      'model_not_found',
    ]);
    expect((await refusal(authorised(t.access, 'model-nope', want))).slice(0, 2)).toEqual([
      404,
      'model_not_found',
    ]);
    expect((await refusal(authorised(t.access, 'model-known', want))).slice(0, 2)).toEqual([
      503,
      'model_not_ready',
    ]);
    const version = await refusal(authorised(t.access, 'model-known', { version: '9', split: false }));
    expect(version.slice(0, 2)).toEqual([404, 'model_version_not_found']);
    expect(version[2]).toMatch(/its versions are 1, 2/);
  });

  it('asks again for a route remembered as missing before refusing a model that exists as not ready', async () => {
    const t = setup({
      models: { 'model-new': { workflow: 'wf-a' }, 'model-known': { workflow: undefined } },
      writtenSince: { 'model-new': route({ workflow: 'wf-a', owner: 'alice' }), 'model-nope': route() },
    });
    const { runtime } = await authorised(t.access, 'model-new', {
      version: undefined,
      split: true,
    });
    expect(runtime.origin).toBe('http://runtime.models.svc:8080');
    expect(t.seen.rechecked).toEqual(['model-new']);
    // Another workflow's key is refused, as it would be for the route.
    t.as({ module: 'bda', roles: ['wf-b'] });
    expect((await refusal(authorised(t.access, 'model-new', { version: undefined, split: true })))[1]).toBe(
      'model_access_denied',
    );
    // A model the directory does not know is not asked for again: still no such model.
    t.as({ module: 'platform', roles: ['models:inference'] });
    expect((await refusal(authorised(t.access, 'model-nope', { version: undefined, split: true })))[1]).toBe(
      'model_not_found',
    );
    // Neither is asked for again: the other workflow's key is refused without it.
    expect(t.seen.rechecked).toEqual(['model-new']);
  });

  it('runs the rate limit before waking a model at zero, and wakes it for a call within the limit', async () => {
    const t = setup({ routes: { 'model-cold': route({ cold: true }) } });
    t.seen.limited = true;
    t.as({ rateLimit: { requests: 1, windowSeconds: 60 } });
    const limited = await refusal(authorised(t.access, 'model-cold', { version: undefined, split: true }));
    expect(limited.slice(0, 2)).toEqual([429, 'rate_limited']);
    expect(t.seen.held).toEqual([]);
    expect(t.seen.refused).toEqual(['k1 rate_limited']);

    // Readiness does not wake it: the address comes back cold.
    t.seen.limited = false;
    const ready = await authorised(t.access, 'model-cold', {
      version: undefined,
      split: false,
      wake: false,
    });
    expect([ready.runtime.cold, t.seen.held]).toEqual([true, []]);

    const { runtime } = await authorised(t.access, 'model-cold', {
      version: undefined,
      split: true,
    });
    expect(t.seen.held).toEqual(['model-cold|']);
    expect(runtime.cold).toBeUndefined();
  });

  it('sends a held call to a starting replica as soon as its readiness probe passes, before the route says it is warm', async () => {
    const until = Date.now() + 60_000;
    const pod = {
      url: 'http://10.0.0.7:8080',
      probe: 'http://10.0.0.7:15021/app-health/mlserver/readiness',
      until,
    };
    const other = {
      url: 'http://10.0.0.8:8080',
      probe: 'http://10.0.0.8:15021/app-health/mlserver/readiness',
      until,
    };
    const t = setup({
      routes: {
        'model-cold': route({ cold: true, grantAudience: 'model/models/model-cold', starting: [other, pod] }),
      },
      readyProbes: [pod.probe],
    });
    const { runtime } = await authorised(t.access, 'model-cold', {
      version: undefined,
      split: true,
    });
    expect(t.seen.probed).toEqual([other.probe, pod.probe]);
    // The pod that answered, with the grant its sidecar takes.
    expect(runtime).toEqual({ origin: pod.url, basePath: '', grantAudience: 'model/models/model-cold' });

    // A version at zero: its own starting replicas, not another version's.
    const v = setup({
      routes: {
        'model-a': route({
          url: 'http://m-1.models.svc:8080',
          versions: [
            { name: '1', url: 'http://m-1.models.svc:8080', percent: 100 },
            { name: '2', url: 'http://m-2.models.svc:8080', percent: 0, cold: true, starting: [pod] },
          ],
        }),
      },
      readyProbes: [pod.probe],
    });
    const two = await authorised(v.access, 'model-a', { version: '2', split: true });
    expect(two.runtime).toMatchObject({ origin: pod.url, version: '2' });

    // Listed too long ago (the operator stopped listing it): not asked, not followed.
    const stale = setup({
      routes: { 'model-cold': route({ cold: true, starting: [{ ...pod, until: Date.now() - 1 }] }) },
      readyProbes: [pod.probe],
    });
    expect(
      (await refusal(authorised(stale.access, 'model-cold', { version: undefined, split: true }))).slice(
        0,
        2,
      ),
    ).toEqual([503, 'model_scaling_up']);
    expect(stale.seen.probed).toEqual([]);

    // None answers ready: the call is not sent anywhere, and gets the activation's refusal.
    const none = setup({ routes: { 'model-cold': route({ cold: true, starting: [pod] }) }, readyProbes: [] });
    expect(
      (await refusal(authorised(none.access, 'model-cold', { version: undefined, split: true }))).slice(0, 2),
    ).toEqual([503, 'model_scaling_up']);
  });

  it('follows no starting replica whose probe is on another host than where it serves', () => {
    const resolved = resolveRoute(
      route({
        cold: true,
        starting: [
          { url: 'http://10.0.0.7:8080', probe: 'http://10.0.0.9:15021/ready', until: 1 },
          { url: 'http://10.0.0.8:8080', probe: 'http://10.0.0.8:15021/ready', until: 1 },
        ],
      }),
    );
    expect(resolved.starting).toEqual([
      { origin: 'http://10.0.0.8:8080', basePath: '', probe: 'http://10.0.0.8:15021/ready', until: 1 },
    ]);
    // A warm route's list is not followed: its Service is.
    expect(
      resolveRoute(
        route({ starting: [{ url: 'http://10.0.0.8:8080', probe: 'http://10.0.0.8:1/', until: 1 }] }),
      ).starting,
    ).toBeUndefined();
  });

  it('refuses a key limited to other models before looking the model up, and lists only its own', async () => {
    const t = setup({
      routes: { 'model-a': route(), 'model-b': route() },
      models: { 'model-a': { workflow: undefined }, 'model-b': { workflow: undefined } },
    });
    t.as({ models: ['model-a'] });
    expect((await authorised(t.access, 'model-a', { version: undefined, split: true })).grant.id).toBe('k1');
    for (const model of ['model-b', 'model-none']) {
      const [status, code, message] = await refusal(
        authorised(t.access, model, { version: undefined, split: true }),
      );
      expect([status, code]).toEqual([403, 'model_not_in_key_scope']);
      expect(message).toMatch(/may call only model-a/);
    }
    expect(t.seen.refused).toEqual(['k1 model_not_in_key_scope', 'k1 model_not_in_key_scope']);
    expect((await callable(t.access)).map((m) => m.name)).toEqual(['model-a']);
  });

  it('lists to each key the models it may call, with readiness per version', async () => {
    const t = setup({
      routes: { 'model-b': route({ workflow: 'wf-a' }) },
      models: {
        'model-b': { workflow: 'wf-a' },
        'model-a': { workflow: undefined, versions: ['1'] },
        'model-c': { workflow: 'wf-b' },
      },
    });
    const all = await callable(t.access);
    expect(all.map((m) => [m.name, m.ready])).toEqual([
      ['model-a', false],
      ['model-b', true],
      ['model-c', false],
    ]);
    expect(all[0]?.versions).toEqual([{ name: '1', ready: false }]);
    t.as({ module: 'bda', roles: ['wf-a'] });
    expect((await callable(t.access)).map((m) => m.name)).toEqual(['model-b']);
  });

  it('a canary the split draws falls back on the ready default; a named version neither counts as drawn nor falls back', async () => {
    const versioned = route({
      url: 'http://m-1.models.svc:8080',
      versions: [
        { name: '1', url: 'http://m-1.models.svc:8080', percent: 0 },
        { name: '2', url: 'http://m-2.models.svc:8080', percent: 100 },
      ],
    });
    const t = setup({
      routes: { 'model-a': versioned },
      models: { 'model-a': { workflow: undefined, versions: ['1', '2'] } },
    });
    const drawn = (await authorised(t.access, 'model-a', { version: undefined, split: true })).runtime;
    expect(drawn).toEqual({
      origin: 'http://m-2.models.svc:8080',
      basePath: '',
      version: '2',
      drawn: true,
      fallback: { origin: 'http://m-1.models.svc:8080', basePath: '', version: '1' },
    });
    const named = (await authorised(t.access, 'model-a', { version: '2', split: true })).runtime;
    expect(named).toEqual({ origin: 'http://m-2.models.svc:8080', basePath: '', version: '2' });
    // With the default not ready there is nothing to fall back on.
    const alone = setup({
      routes: {
        'model-a': route({
          url: 'http://m-2.models.svc:8080',
          versions: [{ name: '2', url: 'http://m-2.models.svc:8080', percent: 100 }],
        }),
      },
    });
    const only = (await authorised(alone.access, 'model-a', { version: undefined, split: true })).runtime;
    expect(only.fallback).toBeUndefined();
    // A canary at zero that does not start in time: the ready default answers instead of a 503.
    const cold = setup({
      routes: {
        'model-a': route({
          url: 'http://m-1.models.svc:8080',
          versions: [
            { name: '1', url: 'http://m-1.models.svc:8080', percent: 0 },
            { name: '2', url: 'http://m-2.models.svc:8080', percent: 100, cold: true },
          ],
        }),
      },
    });
    const fellBack = (await authorised(cold.access, 'model-a', { version: undefined, split: true })).runtime;
    expect(cold.seen.held).toEqual(['model-a|2', 'model-a|2']);
    expect(fellBack).toEqual({ origin: 'http://m-1.models.svc:8080', basePath: '', version: '1' });
  });
});
