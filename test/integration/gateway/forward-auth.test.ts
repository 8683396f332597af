// Tollgate's decision inside the proxy a team already runs: real nginx (auth_request, with the
// configuration shipped in examples/forward-auth/nginx) and real Traefik (ForwardAuth, the
// example's middlewares) in front of two workflows' services, the gateway in-process with real
// Redis. Whatever the proxy lets through reached Tollgate's decision first; whatever Tollgate
// refuses never reaches a service, and the client gets Tollgate's status, code and message.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { redisKeys } from '../../../common/redis/schema.js';
import { RouteWriter } from '../../../common/routes/workflow-routes.js';
import { testSealer } from '../signing.js';
import { nginx, redis, traefik } from '../../harness/index.js';
import { repoRoot } from '../../harness/paths.js';
import {
  apikey,
  createKey,
  deleteKey,
  redisClient,
  registerService,
  send,
  startGateway,
  startUpstream,
  uniqueName,
  type Answer,
  type TestGateway,
  type Upstream,
} from './support.js';

const examples = join(repoRoot, 'examples', 'forward-auth');

function nginxConf(gateway: string, routes: Array<[string, Upstream]>): string {
  const { host } = new URL(gateway);
  const locations = routes
    .map(
      ([prefix, up]) => `
    location ${prefix} {
      include ${join(examples, 'nginx', 'tollgate-auth.conf')};
      proxy_pass ${up.url};
    }`,
    )
    .join('');
  return `
worker_processes 1;
daemon off;
pid {{dir}}/nginx.pid;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path {{dir}}/body;
  proxy_temp_path {{dir}}/proxy;
  fastcgi_temp_path {{dir}}/fastcgi;
  uwsgi_temp_path {{dir}}/uwsgi;
  scgi_temp_path {{dir}}/scgi;
  upstream tollgate { server ${host}; keepalive 8; }
  server {
    listen 127.0.0.1:{{port}};
    {{ping}}
    include ${join(examples, 'nginx', 'tollgate-server.conf')};
    ${locations}
  }
}`;
}

interface TraefikExample {
  http: {
    middlewares: { tollgate: { forwardAuth: { address: string } } } & Record<string, unknown>;
    routers: Record<string, { rule: string; middlewares: string[]; service: string }>;
    services: Record<string, { loadBalancer: { servers: Array<{ url: string }> } }>;
  };
}

/** The example's middlewares as shipped, its router and service repeated for each route. */
function traefikDynamic(gateway: string, routes: Array<[string, Upstream]>): string {
  const doc = parse(readFileSync(join(examples, 'traefik', 'dynamic.yaml'), 'utf8')) as TraefikExample;
  doc.http.middlewares.tollgate.forwardAuth.address = `${gateway}/auth/forward`;
  const [router] = Object.values(doc.http.routers);
  doc.http.routers = {};
  doc.http.services = {};
  routes.forEach(([prefix, up], i) => {
    doc.http.routers[`r${i}`] = {
      rule: `PathPrefix(\`${prefix}\`)`,
      middlewares: router?.middlewares ?? [],
      service: `s${i}`,
    };
    doc.http.services[`s${i}`] = { loadBalancer: { servers: [{ url: up.url }] } };
  });
  return stringify(doc);
}

describe('the decision inside the proxy a team runs (forward auth)', () => {
  let gw: TestGateway;
  let r: ReturnType<typeof redisClient>;
  let a: Upstream;
  let b: Upstream;
  let platform: Upstream;
  const wfA = uniqueName('wfa');
  const wfB = uniqueName('wfb');
  let keyA: Awaited<ReturnType<typeof createKey>>;
  let limited: Awaited<ReturnType<typeof createKey>>;
  let viewer: Awaited<ReturnType<typeof createKey>>;
  let fenced: Awaited<ReturnType<typeof createKey>>;
  let local: Awaited<ReturnType<typeof createKey>>;
  let stopped = false;
  const proxies: Record<'nginx' | 'traefik', string> = { nginx: '', traefik: '' };

  beforeAll(async () => {
    const info = await redis();
    r = redisClient(info.url);
    [a, b, platform] = await Promise.all([startUpstream(), startUpstream(), startUpstream()]);
    await registerService(r, wfA, 'svc', a.url);
    await registerService(r, wfB, 'svc', b.url);
    gw = await startGateway({
      redisUrl: info.url,
      upstreams: { datasets: platform.url },
      // The proxies are on loopback: their X-Forwarded-For is the client's address.
      trustedProxies: 1,
      trustedProxyCidrs: ['127.0.0.0/8'],
      usageFlushMs: 50,
      // Its price is known only from its body's batch.
      creditCosts: { 'model-fraud': { credits: 2, per: 'row' } },
    });
    // model-fraud published as a service of workflow A, as the operator writes a Model's route.
    await new RouteWriter(r, await testSealer()).put(redisKeys.bdaRoute(wfA, 'model-fraud'), {
      url: a.url,
      owner: 'alice',
      workflow: wfA,
      source: 'model/team-a/model-fraud',
    });
    keyA = await createKey(r, 'bda', [wfA]);
    limited = await createKey(r, 'bda', [wfA], { rateLimit: { requests: 2, windowSeconds: 60 } });
    viewer = await createKey(r, 'platform', ['viewer']);
    // Keys for another network than the one the clients call from, and for theirs.
    fenced = await createKey(r, 'bda', [wfA], { allowedCidrs: ['10.0.0.0/8'] });
    local = await createKey(r, 'bda', [wfA], { allowedCidrs: ['127.0.0.0/8'] });
    const routes: Array<[string, Upstream]> = [
      [`/events/bda/${wfA}/svc/`, a],
      [`/events/bda/${wfB}/svc/`, b],
      ['/events/platform/api/v1/datasets', platform],
    ];
    const [viaNginx, viaTraefik] = await Promise.all([
      nginx('forward-auth', nginxConf(gw.url, routes)),
      traefik('forward-auth', traefikDynamic(gw.url, routes)),
    ]);
    proxies.nginx = viaNginx.url;
    proxies.traefik = viaTraefik.url;
    // Traefik loads its file provider's routers just after it answers its ping.
    for (let i = 0; i < 100; i++) {
      if ((await send(proxies.traefik, `/events/bda/${wfA}/svc/`)).status !== 404) break;
      await new Promise((res) => setTimeout(res, 100));
    }
  });

  afterAll(async () => {
    if (!stopped) await gw.stop();
    await Promise.all([a.close(), b.close(), platform.close()]);
    r.disconnect();
  });

  beforeEach(() => {
    for (const up of [a, b, platform]) up.seen.length = 0;
  });

  const seenBy = (up: Upstream): number => up.seen.length;

  describe.each(['nginx', 'traefik'] as const)('through %s', (proxy) => {
    const call = (path: string, opts: Parameters<typeof send>[2] = {}): Promise<Answer> =>
      send(proxies[proxy], path, opts);

    it('lets a key through to its workflow with the grant in place of the key, and counts its usage', async () => {
      const answer = await call(`/events/bda/${wfA}/svc/orders/7?sort=desc`, {
        headers: {
          ...apikey(keyA.key),
          'x-request-id': `trace-${proxy}`,
          'x-rewrite-url': '/admin',
          forwarded: 'for=192.0.2.1;host=evil.example',
          'x-forwarded-prefix': '/other',
        },
      });
      expect(answer.status).toBe(200);
      const [seen] = a.seen;
      expect(seen?.url).toBe(`/events/bda/${wfA}/svc/orders/7?sort=desc`);
      expect(seen?.headers.authorization).toBeUndefined();
      expect(JSON.stringify(seen?.headers)).not.toContain(keyA.key);
      expect(seen?.headers['x-tollgate-key-id']).toBe(keyA.grant.id);
      expect(seen?.headers['x-tollgate-module']).toBe('bda');
      expect(seen?.headers['x-tollgate-roles']).toBe(wfA);
      expect(seen?.headers['x-request-id']).toBe(`trace-${proxy}`);
      // Nothing a service could read as another path or origin than the one judged.
      for (const h of ['x-rewrite-url', 'x-original-url', 'forwarded', 'x-forwarded-prefix'])
        expect(seen?.headers[h]).toBeUndefined();
      await gw.services.usage.flush();
      const endpoints = await r.zrange(`${redisKeys.keyUsage(keyA.grant.id)}:ep`, 0, -1);
      expect(endpoints).toContain(`GET /events/bda/${wfA}/svc`);
    });

    it('answers a call without a key with 401, the code and how to authenticate; the service sees nothing', async () => {
      const answer = await call(`/events/bda/${wfA}/svc/orders`);
      expect(answer.status).toBe(401);
      expect(answer.json.code).toBe('missing_api_key');
      expect(answer.json.error).toContain('Authorization: Apikey');
      expect(answer.headers['www-authenticate']).toBe('Apikey');
      expect(seenBy(a)).toBe(0);
    });

    it("refuses a key for one workflow on another's service, with Tollgate's 403 and code", async () => {
      const answer = await call(`/events/bda/${wfB}/svc/orders`, { headers: apikey(keyA.key) });
      expect(answer.status).toBe(403);
      expect(answer.json.code).toBe('workflow_not_allowed');
      expect(answer.headers['x-request-id']).toMatch(/^[\w.:-]+$/);
      expect(seenBy(b)).toBe(0);
    });

    // nginx routes on the path it cleaned and passes the raw one on, which Tollgate refuses as
    // ambiguous; Traefik cleans the path before it routes and asks (X-Forwarded-Uri is the
    // cleaned path), so Tollgate judges the workflow it routes to. Either way nothing is let
    // through to a service the key is not for.
    it.each([
      ['dot segments', `/events/bda/WFA/svc/../../WFB/svc/secret`, 'path_traversal'],
      ['encoded dot segments', `/events/bda/WFA/svc/%2e%2e/%2e%2e/WFB/svc/secret`, 'invalid_path_encoding'],
      ['an encoded slash', `/events/bda/WFB%2fsvc/secret`, 'encoded_separator'],
      ['a doubled slash', `/events/bda/WFB//svc/secret`, 'empty_path_segment'],
      ['a backslash', `/events/bda/WFA/svc/..\\..\\WFB/svc/secret`, 'backslash_in_path'],
    ])("never lets a path with %s reach another workflow's service", async (_what, template, code) => {
      const path = template.replaceAll('WFA', wfA).replaceAll('WFB', wfB);
      const answer = await call(path, { headers: apikey(keyA.key) });
      if (proxy === 'nginx') {
        expect(answer.status).toBe(400);
        expect(answer.json.code).toBe(code);
      } else {
        expect([400, 403, 404]).toContain(answer.status);
      }
      expect(seenBy(b)).toBe(0);
      expect(seenBy(a)).toBe(0);
    });

    it("answers a key past its limit with Tollgate's 429, code and Retry-After", async () => {
      const path = `/events/bda/${wfA}/svc/limited`;
      const statuses: number[] = [];
      let last: Answer | undefined;
      for (let i = 0; i < 3; i++) {
        last = await call(path, { headers: apikey(limited.key) });
        statuses.push(last.status);
      }
      // The key's two calls a minute are shared by both proxies' tests: the third call here is
      // past them at the latest.
      expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(2);
      expect(last?.status).toBe(429);
      expect(last?.json.code).toBe('rate_limited');
      expect(Number(last?.headers['retry-after'])).toBeGreaterThan(0);
      expect(a.seen.filter((s) => s.url === path).length).toBe(statuses.filter((s) => s === 200).length);
    });

    it('judges the method the client used, not the subrequest: a viewer reads a platform resource and may not write it', async () => {
      const read = await call('/events/platform/api/v1/datasets/d1', { headers: apikey(viewer.key) });
      expect(read.status).toBe(200);
      const write = await call('/events/platform/api/v1/datasets/d1', {
        method: 'PUT',
        headers: { ...apikey(viewer.key), 'content-type': 'application/json' },
        body: '{"name":"x"}',
      });
      expect(write.status).toBe(403);
      expect(write.json.code).toBe('role_not_allowed');
      const overridden = await call('/events/platform/api/v1/datasets/d1', {
        headers: { ...apikey(viewer.key), 'x-http-method-override': 'PUT' },
      });
      expect(overridden.status).toBe(400);
      expect(overridden.json.code).toBe('method_override');
      expect(platform.seen.map((s) => s.method)).toEqual(['GET']);
    });

    it.each([
      ['a grant header of its own', { 'x-tollgate-roles': 'someone-else' }],
      ['a header a CGI server reads as a grant header', { X_Tollgate_Roles: 'admin' }],
      ['a header a CGI server reads as a method override', { X_HTTP_Method_Override: 'DELETE' }],
    ])('refuses a call carrying %s, which a proxy would pass on', async (_what, extra) => {
      const answer = await call(`/events/bda/${wfA}/svc/orders`, {
        headers: { ...apikey(keyA.key), ...extra },
      });
      // nginx drops names with "_" itself (underscores_in_headers off): the call goes on without them.
      if (proxy === 'nginx' && Object.keys(extra)[0]?.includes('_') === true) {
        expect(answer.status).toBe(200);
        expect(Object.keys(a.seen[0]?.headers ?? {}).filter((h) => h.includes('_'))).toEqual([]);
        return;
      }
      expect([answer.status, answer.json.code]).toEqual([400, 'invalid_request']);
      expect(seenBy(a)).toBe(0);
    });

    // nginx routes on the decoded path and sends the raw one, which Tollgate refuses (Envoy, which
    // routes on the raw path, would read another workflow); Traefik decodes it before it routes
    // and asks: one reading, judged and routed alike.
    it('judges a path that percent-encodes a letter as the proxy routes it, or refuses it', async () => {
      const encoded = `/events/bda/${wfA.replace('w', '%77')}/svc/orders`;
      const answer = await call(encoded, { headers: apikey(keyA.key) });
      if (proxy === 'nginx') {
        expect([answer.status, answer.json.code]).toEqual([400, 'invalid_path_encoding']);
        expect(seenBy(a)).toBe(0);
      } else {
        expect(answer.status).toBe(200);
        expect(a.seen[0]?.url).toBe(`/events/bda/${wfA}/svc/orders`);
      }
      expect(seenBy(b)).toBe(0);
    });

    it('judges a key limited to networks by the address the proxy saw', async () => {
      const outside = await call(`/events/bda/${wfA}/svc/x`, { headers: apikey(fenced.key) });
      expect(outside.status).toBe(403);
      expect(outside.json.code).toBe('address_not_allowed');
      const inside = await call(`/events/bda/${wfA}/svc/x`, { headers: apikey(local.key) });
      expect(inside.status).toBe(200);
      expect(seenBy(a)).toBe(1);
    });

    it("does not let a client's own forward-auth headers change what is judged", async () => {
      const answer = await call(`/events/bda/${wfB}/svc/orders`, {
        headers: {
          ...apikey(keyA.key),
          'x-forwarded-uri': `/events/bda/${wfA}/svc/orders`,
          'x-original-uri': `/events/bda/${wfA}/svc/orders`,
          'x-forwarded-method': 'GET',
        },
      });
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect(seenBy(b)).toBe(0);
    });
  });

  describe('the authorization endpoints themselves', () => {
    const ask = (path: string, headers: Record<string, string>): Promise<Answer> =>
      send(gw.url, path, { headers });

    it('allow with the grant headers and no body', async () => {
      const answer = await ask('/auth/forward', {
        ...apikey(keyA.key),
        'x-forwarded-method': 'POST',
        'x-forwarded-uri': `/events/bda/${wfA}/svc/x`,
      });
      expect(answer.status).toBe(200);
      expect(answer.text).toBe('');
      expect(answer.headers['x-tollgate-key-id']).toBe(keyA.grant.id);
      expect(answer.headers['x-tollgate-roles']).toBe(wfA);
      expect(seenBy(a)).toBe(0);
    });

    it('take an ingress-nginx style X-Original-URL', async () => {
      const answer = await ask('/auth/request', {
        ...apikey(keyA.key),
        'x-original-method': 'GET',
        'x-original-url': `https://api.example.test/events/bda/${wfB}/svc/x?y=1`,
      });
      expect(answer.status).toBe(403);
      expect(answer.headers['x-tollgate-status']).toBe('403');
      expect(JSON.parse(String(answer.headers['x-tollgate-error'])).code).toBe('workflow_not_allowed');
    });

    it('judge a V2 call as /v2 does: the key scope, the method, the model', async () => {
      const scoped = await createKey(r, 'platform', ['models:inference'], { models: ['model-iris'] });
      const v2 = (key: string, method: string, uri: string): Promise<Answer> =>
        ask('/auth/forward', { ...apikey(key), 'x-forwarded-method': method, 'x-forwarded-uri': uri });
      const outside = await v2(scoped.key, 'POST', '/v2/models/model-fraud/infer');
      expect([outside.status, outside.json.code]).toEqual([403, 'model_not_in_key_scope']);
      const notInference = await v2(viewer.key, 'POST', '/v2/models/model-iris/infer');
      expect([notInference.status, notInference.json.code]).toEqual([403, 'model_access_denied']);
      const wrongMethod = await v2(scoped.key, 'GET', '/v2/models/model-iris/infer');
      expect([wrongMethod.status, wrongMethod.headers.allow]).toEqual([405, 'POST']);
      // This gateway serves no models: the one in scope is not there.
      const absent = await v2(scoped.key, 'POST', '/v2/models/model-iris/infer');
      expect([absent.status, absent.json.code]).toEqual([404, 'model_not_found']);
    });

    it('refuse the inference of a model priced per row, whose body they do not see, and judge its other calls', async () => {
      const infer = await ask('/auth/forward', {
        ...apikey(keyA.key),
        'x-forwarded-method': 'POST',
        'x-forwarded-uri': `/events/bda/${wfA}/model-fraud/v2/models/model-fraud/infer`,
      });
      expect([infer.status, infer.json.code]).toEqual([403, 'priced_per_row']);
      expect(infer.json.error).toMatch(
        /model 'model-fraud' is priced per row of its batch.*through the gateway itself/,
      );
      const metadata = await ask('/auth/forward', {
        ...apikey(keyA.key),
        'x-forwarded-method': 'GET',
        'x-forwarded-uri': `/events/bda/${wfA}/model-fraud/v2/models/model-fraud`,
      });
      expect(metadata.status).toBe(200);
      expect(seenBy(a)).toBe(0);
    });

    it.each([
      [{ 'x-forwarded-uri': '/events/bda/w/s/x' }, 400, 'missing_original_request', 'X-Forwarded-Method'],
      [{ 'x-forwarded-method': 'GET' }, 400, 'missing_original_request', 'X-Original-URI'],
      [
        { 'x-forwarded-method': 'GET', 'x-original-method': 'PUT', 'x-forwarded-uri': '/events/bda/w/s/x' },
        400,
        'conflicting_original_request',
        'two different methods',
      ],
      [
        { 'x-forwarded-method': 'get', 'x-forwarded-uri': '/events/bda/w/s/x' },
        400,
        'invalid_request',
        'upper case',
      ],
      [
        { 'x-forwarded-method': 'GET', 'x-forwarded-uri': 'events/x' },
        400,
        'invalid_request',
        'starts with "/"',
      ],
      [
        { 'x-forwarded-method': 'GET', 'x-original-url': 'ftp://h/x' },
        400,
        'invalid_request',
        'http or https',
      ],
      [{ 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/panel/' }, 404, 'unknown_endpoint', '/events/bda'],
    ])(
      'refuse a request that does not say which call it is about (%j)',
      async (headers, status, code, says) => {
        const answer = await ask('/auth/forward', { ...apikey(keyA.key), ...headers });
        expect(answer.status).toBe(status);
        expect(answer.json.code).toBe(code);
        expect(answer.json.error).toContain(says);
      },
    );
  });

  it('refuses a deleted key at once, and fails closed when Tollgate itself is down', async () => {
    await deleteKey(r, { hash: keyA.hash, id: keyA.grant.id });
    let status = 0;
    for (let i = 0; i < 50 && status !== 401; i++) {
      status = (await send(proxies.nginx, `/events/bda/${wfA}/svc/x`, { headers: apikey(keyA.key) })).status;
    }
    expect(status).toBe(401);
    await gw.stop();
    stopped = true;
    for (const proxy of ['nginx', 'traefik'] as const) {
      const answer = await send(proxies[proxy], `/events/bda/${wfA}/svc/x`, { headers: apikey(local.key) });
      expect(answer.status).toBeGreaterThanOrEqual(500);
    }
    expect(seenBy(a)).toBe(0);
  });
});
