// Envoy's ext_authz gRPC API answered with Tollgate's decision, asked by a client generated from
// the published proto (go-control-plane's envoy/service/auth/v3, test/harness/go/extauthz-client):
// the same key, workflow, path, limit and network checks as a call the gateway proxies, with the
// grant in the headers Envoy sets on the call and Tollgate's status, code and body in a refusal.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { binDir } from '../../harness/paths.js';
import { redis } from '../../harness/index.js';
import {
  createKey,
  redisClient,
  registerService,
  startGateway,
  startUpstream,
  uniqueName,
  type TestGateway,
  type Upstream,
} from './support.js';

const CLIENT = join(binDir, 'extauthz-client');

interface HeaderOption {
  header: { key: string; value: string };
  appendAction?: string;
}
interface CheckAnswer {
  status?: { code?: number; message?: string };
  okResponse?: { headers?: HeaderOption[]; headersToRemove?: string[] };
  deniedResponse?: { status: { code: string }; headers?: HeaderOption[]; body?: string };
  grpcCode?: number;
  message?: string;
}

/** One Check through the published client, as Envoy would send it for the call described. */
function check(port: number, http: Record<string, unknown>, source = '203.0.113.7'): Promise<CheckAnswer> {
  const request = {
    attributes: {
      source: { address: { socketAddress: { address: source, portValue: 40000 } } },
      request: { http: { scheme: 'http', host: 'api.example.test', protocol: 'HTTP/1.1', ...http } },
    },
  };
  return new Promise((resolve, reject) => {
    const child = execFile(CLIENT, [`127.0.0.1:${port}`], (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as CheckAnswer);
    });
    child.stdin?.end(JSON.stringify(request));
  });
}

const headerOf = (options: HeaderOption[] | undefined, name: string): string | undefined =>
  options?.find((o) => o.header.key === name)?.header.value;

describe("Envoy's ext_authz, answered with Tollgate's decision", () => {
  let gw: TestGateway;
  let port: number;
  let r: ReturnType<typeof redisClient>;
  let up: Upstream;
  const wfA = uniqueName('wfa');
  const wfB = uniqueName('wfb');
  let keyA: Awaited<ReturnType<typeof createKey>>;

  beforeAll(async () => {
    const info = await redis();
    r = redisClient(info.url);
    up = await startUpstream();
    await registerService(r, wfA, 'svc', up.url);
    await registerService(r, wfB, 'svc', up.url);
    gw = await startGateway({
      redisUrl: info.url,
      extAuthzPort: 0,
      // The client is on loopback, as Envoy beside the gateway: its source address is believed.
      trustedProxies: 1,
      trustedProxyCidrs: ['127.0.0.0/8'],
    });
    port = gw.gateway.extAuthzPort() as number;
    keyA = await createKey(r, 'bda', [wfA]);
  });

  afterAll(async () => {
    await gw.stop();
    await up.close();
    r.disconnect();
  });

  it('allows a key on its workflow: the grant replaces what the client sent, and the key goes', async () => {
    const answer = await check(port, {
      method: 'POST',
      path: `/events/bda/${wfA}/svc/orders?x=1`,
      headers: {
        authorization: `Apikey ${keyA.key}`,
        'x-request-id': 'trace-envoy-1',
      },
    });
    expect(answer.status?.code ?? 0).toBe(0);
    const set = answer.okResponse?.headers;
    expect(headerOf(set, 'x-tollgate-key-id')).toBe(keyA.grant.id);
    expect(headerOf(set, 'x-tollgate-module')).toBe('bda');
    expect(headerOf(set, 'x-tollgate-roles')).toBe(wfA);
    expect(headerOf(set, 'x-request-id')).toBe('trace-envoy-1');
    expect(set?.every((o) => o.appendAction === 'OVERWRITE_IF_EXISTS_OR_ADD')).toBe(true);
    expect(answer.okResponse?.headersToRemove).toEqual(['authorization']);
    expect(JSON.stringify(answer)).not.toContain(keyA.key);
  });

  it.each([
    ['no key', {}, 401, 'missing_api_key', 16],
    ["another workflow's service", { authorization: 'KEY' }, 403, 'workflow_not_allowed', 7, 'WFB'],
  ])(
    "refuses %s with Tollgate's status, code and body",
    async (_what, extra, status, code, grpc, workflow = 'WFA') => {
      const headers = Object.fromEntries(
        Object.entries(extra).map(([k, v]) => [k, v === 'KEY' ? `Apikey ${keyA.key}` : v]),
      );
      const answer = await check(port, {
        method: 'GET',
        path: `/events/bda/${workflow === 'WFB' ? wfB : wfA}/svc/x`,
        headers: { ...headers, 'x-request-id': 'trace-denied' },
      });
      expect(answer.status?.code).toBe(grpc);
      expect(answer.deniedResponse?.status.code).toBe(
        { 401: 'Unauthorized', 403: 'Forbidden' }[status as 401 | 403],
      );
      expect(JSON.parse(answer.deniedResponse?.body ?? '{}')).toMatchObject({ code });
      expect(headerOf(answer.deniedResponse?.headers, 'content-type')).toContain('application/json');
      expect(headerOf(answer.deniedResponse?.headers, 'x-request-id')).toBe('trace-denied');
      if (status === 401) expect(headerOf(answer.deniedResponse?.headers, 'www-authenticate')).toBe('Apikey');
    },
  );

  it.each([
    ['dot segments', '/events/bda/WFA/svc/../../WFB/svc/x', 'path_traversal'],
    ['an encoded slash', '/events/bda/WFB%2fsvc/x', 'encoded_separator'],
    ['a lower-case method', '/events/bda/WFA/svc/x', 'invalid_request', 'get'],
  ])('refuses a call with %s as the gateway does (400)', async (_what, template, code, method = 'GET') => {
    const answer = await check(port, {
      method,
      path: template.replaceAll('WFA', wfA).replaceAll('WFB', wfB),
      headers: { authorization: `Apikey ${keyA.key}` },
    });
    expect(answer.status?.code).toBe(3);
    expect(answer.deniedResponse?.status.code).toBe('BadRequest');
    expect(JSON.parse(answer.deniedResponse?.body ?? '{}')).toMatchObject({ code });
  });

  it.each([
    ['a grant header of its own', { 'x-tollgate-owner': 'someone' }, 'invalid_request'],
    ['a name a CGI server reads as a grant header', { x_tollgate_roles: 'admin' }, 'invalid_request'],
    [
      'a name a CGI server reads as a method override',
      { x_http_method_override: 'DELETE' },
      'invalid_request',
    ],
    ['an upgrade to a WebSocket', { upgrade: 'websocket', connection: 'upgrade' }, 'invalid_request'],
    ['a header named like a built-in property', { constructor: 'x', __proto__: 'y' }, ''],
  ])('refuses a call carrying %s, which Envoy would pass on', async (_what, extra, code) => {
    const answer = await check(port, {
      method: 'GET',
      path: `/events/bda/${wfA}/svc/x`,
      headers: { authorization: `Apikey ${keyA.key}`, ...extra },
    });
    if (code === '') {
      // Headers like any other: the call is judged on its key.
      expect(headerOf(answer.okResponse?.headers, 'x-tollgate-key-id')).toBe(keyA.grant.id);
      return;
    }
    expect(answer.deniedResponse?.status.code).toBe('BadRequest');
    expect(JSON.parse(answer.deniedResponse?.body ?? '{}')).toMatchObject({ code });
  });

  it('refuses a path that percent-encodes a letter, which Envoy routes on as sent', async () => {
    const answer = await check(port, {
      method: 'GET',
      path: `/events/bda/${wfA.replace('w', '%77')}/svc/x`,
      headers: { authorization: `Apikey ${keyA.key}` },
    });
    expect(JSON.parse(answer.deniedResponse?.body ?? '{}')).toMatchObject({ code: 'invalid_path_encoding' });
  });

  it("counts the key's limit: past it, 429 with Retry-After", async () => {
    const limited = await createKey(r, 'bda', [wfA], { rateLimit: { requests: 2, windowSeconds: 60 } });
    const ask = (): Promise<CheckAnswer> =>
      check(port, {
        method: 'GET',
        path: `/events/bda/${wfA}/svc/x`,
        headers: { authorization: `Apikey ${limited.key}` },
      });
    expect((await ask()).okResponse).toBeDefined();
    expect((await ask()).okResponse).toBeDefined();
    const third = await ask();
    expect(third.status?.code).toBe(8);
    expect(third.deniedResponse?.status.code).toBe('TooManyRequests');
    expect(JSON.parse(third.deniedResponse?.body ?? '{}')).toMatchObject({ code: 'rate_limited' });
    expect(Number(headerOf(third.deniedResponse?.headers, 'retry-after'))).toBeGreaterThan(0);
  });

  it("judges a key limited to networks by the CheckRequest's source, never by X-Forwarded-For", async () => {
    const fenced = await createKey(r, 'bda', [wfA], { allowedCidrs: ['203.0.113.0/24'] });
    const ask = (source: string, xff?: string): Promise<CheckAnswer> =>
      check(
        port,
        {
          method: 'GET',
          path: `/events/bda/${wfA}/svc/x`,
          headers: {
            authorization: `Apikey ${fenced.key}`,
            ...(xff === undefined ? {} : { 'x-forwarded-for': xff }),
          },
        },
        source,
      );
    expect((await ask('203.0.113.9')).okResponse).toBeDefined();
    const outside = await ask('198.51.100.4', '203.0.113.9');
    expect(JSON.parse(outside.deniedResponse?.body ?? '{}')).toMatchObject({ code: 'address_not_allowed' });
  });

  it('reads the headers of a header_map (encode_raw_headers) as those of the map, and refuses two keys', async () => {
    const one = await check(port, {
      method: 'GET',
      path: `/events/bda/${wfA}/svc/x`,
      headerMap: {
        headers: [{ key: 'authorization', rawValue: Buffer.from(`Apikey ${keyA.key}`).toString('base64') }],
      },
    });
    expect(headerOf(one.okResponse?.headers, 'x-tollgate-key-id')).toBe(keyA.grant.id);
    const two = await check(port, {
      method: 'GET',
      path: `/events/bda/${wfA}/svc/x`,
      headerMap: {
        headers: [
          { key: 'authorization', value: `Apikey ${keyA.key}` },
          { key: 'authorization', value: 'Apikey tgb_other' },
        ],
      },
    });
    expect(JSON.parse(two.deniedResponse?.body ?? '{}')).toMatchObject({ code: 'malformed_authorization' });
  });

  it('refuses a CheckRequest that describes no HTTP call with INVALID_ARGUMENT', async () => {
    const request = { attributes: { source: { address: { socketAddress: { address: '203.0.113.7' } } } } };
    const answer = await new Promise<CheckAnswer>((resolve, reject) => {
      const child = execFile(CLIENT, [`127.0.0.1:${port}`], (err, stdout) =>
        err === null ? resolve(JSON.parse(stdout) as CheckAnswer) : reject(err),
      );
      child.stdin?.end(JSON.stringify(request));
    });
    expect(answer.grpcCode).toBe(3);
    expect(answer.message).toContain('attributes.request.http');
    expect(up.seen.length).toBe(0);
  });
});
