import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { generateKey } from '../../../common/apikey/format.js';
import { redis } from '../../harness/index.js';
import { waitUntil } from '../../harness/wait.js';
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

/**
 * Every refusal of the security list: the specific status and code, and the upstream
 * never sees the request.
 */
describe('gateway security', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let r: ReturnType<typeof redisClient>;
  const wfA = uniqueName('wfa');
  const wfB = uniqueName('wfb');
  let bdaA: string;
  let platformViewer: string;

  beforeAll(async () => {
    // Its own Redis: one test counts the commands Redis processed, which other files must not move.
    const info = await redis('gateway-security');
    r = redisClient(info.url);
    upstream = await startUpstream();
    await registerService(r, wfA, 'svc', `${upstream.url}/a`);
    await registerService(r, wfB, 'svc', `${upstream.url}/b`);
    gw = await startGateway({
      redisUrl: info.url,
      upstreams: { datasets: upstream.url },
      bodyLimitBytes: 1024,
      headerLimitBytes: 16 * 1024,
    });
    bdaA = (await createKey(r, 'bda', [wfA])).key;
    platformViewer = (await createKey(r, 'platform', ['viewer'])).key;
  });

  afterAll(async () => {
    await gw.stop();
    await upstream.close();
    r.disconnect();
  });

  beforeEach(() => {
    upstream.seen.length = 0;
  });

  /** Writes raw bytes and returns everything the gateway answers until it closes the connection. */
  function rawExchange(bytes: string): Promise<string> {
    const { hostname, port } = new URL(gw.url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => socket.write(bytes));
      let answer = '';
      socket.on('data', (c: Buffer) => (answer += c.toString()));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
  }

  function expectRefused(answer: Answer, status: number, code: string): void {
    expect({ status: answer.status, code: answer.json.code }).toEqual({ status, code });
    expect(typeof answer.json.error).toBe('string');
    expect(upstream.seen).toEqual([]);
  }

  describe('credentials', () => {
    const path = () => `/events/bda/${wfA}/svc/hello`;
    it.each([
      ['missing', () => ({}), 'missing_api_key'],
      ['empty', () => ({ authorization: '' }), 'empty_api_key'],
      ['lower-case scheme', () => ({ authorization: `apikey ${bdaA}` }), 'invalid_auth_scheme'],
      ['Bearer scheme', () => ({ authorization: `Bearer ${bdaA}` }), 'invalid_auth_scheme'],
      ['extra spaces', () => ({ authorization: `Apikey   ${bdaA}` }), 'malformed_authorization'],
      ['wrong prefix', () => ({ authorization: `Apikey tgx_${bdaA.slice(4)}` }), 'malformed_api_key'],
      [
        'bad checksum',
        () => ({ authorization: `Apikey ${bdaA.slice(0, -1)}${bdaA.endsWith('A') ? 'B' : 'A'}` }),
        'invalid_key_checksum',
      ],
      ['unknown', () => apikey(generateKey('bda')), 'unknown_api_key'],
    ])('%s key → 401 %s with WWW-Authenticate', async (_what, headers, code) => {
      const answer = await send(gw.url, path(), { headers: headers() });
      expectRefused(answer, 401, code);
      expect(answer.headers['www-authenticate']).toBe('Apikey');
    });

    it('refuses an expired key', async () => {
      const { key } = await createKey(r, 'bda', [wfA], {
        expiresAt: new Date(Date.now() - 1000).toISOString(),
      });
      expectRefused(await send(gw.url, path(), { headers: apikey(key) }), 401, 'expired_api_key');
    });

    it('refuses a deleted key, even one the gateway had just cached', async () => {
      const created = await createKey(r, 'bda', [wfA]);
      expect((await send(gw.url, path(), { headers: apikey(created.key) })).status).toBe(200);
      upstream.seen.length = 0;
      await deleteKey(r, { hash: created.hash, id: created.grant.id });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expectRefused(await send(gw.url, path(), { headers: apikey(created.key) }), 401, 'unknown_api_key');
    });

    it('shape errors cost no Redis round trip', async () => {
      // MONITOR, not a command count: the gateway's background work (webhook queue, inbox) may
      // run meanwhile; what matters is that no refused shape ever reached the key index.
      const monitor = await r.monitor();
      const seen: string[][] = [];
      monitor.on('monitor', (_time: string, args: string[]) => seen.push(args));
      try {
        const marker = `shape-errors-${Date.now()}`;
        await r.echo(`${marker}-start`);
        for (let i = 0; i < 20; i++)
          await send(gw.url, path(), { headers: { authorization: `Apikey tgb_nope` } });
        await r.echo(`${marker}-end`);
        const at = (word: string): number => seen.findIndex((args) => args.includes(`${marker}-${word}`));
        await waitUntil('MONITOR saw the end marker', async () => at('end') >= 0, { timeoutMs: 5000 });
        expect(at('start')).toBeGreaterThanOrEqual(0);
        const between = seen.slice(at('start') + 1, at('end'));
        // A key check reads tg:key:<hash> and counts tg:rl:…; a refused shape must do neither.
        const keyWork = between.filter((args) => args.some((a) => /^tg:(key|rl|cr):/.test(a)));
        expect(keyWork).toEqual([]);
      } finally {
        monitor.disconnect();
      }
    });
  });

  describe('a bda key for workflow A reaching workflow B', () => {
    it('works on its own workflow', async () => {
      const answer = await send(gw.url, `/events/bda/${wfA}/svc/hello?x=1`, { headers: apikey(bdaA) });
      expect(answer.status).toBe(200);
      expect(upstream.seen.map((s) => s.url)).toEqual(['/a/hello?x=1']);
    });

    it('is refused on workflow B directly', async () => {
      expectRefused(
        await send(gw.url, `/events/bda/${wfB}/svc/hello`, { headers: apikey(bdaA) }),
        403,
        'workflow_not_allowed',
      );
    });

    it.each([
      ['..', () => `/events/bda/${wfA}/svc/../../${wfB}/svc/hello`, 'path_traversal'],
      ['..  in the workflow position', () => `/events/bda/${wfA}/../${wfB}/svc/hello`, 'path_traversal'],
      ['%2e%2e', () => `/events/bda/${wfA}/svc/%2e%2e/%2e%2e/${wfB}/svc/hello`, 'path_traversal'],
      ['%2E%2E upper-case', () => `/events/bda/${wfA}/svc/%2E%2E/%2E%2E/${wfB}/svc`, 'path_traversal'],
      ['.%2e mixed', () => `/events/bda/${wfA}/svc/.%2e/.%2e/${wfB}/svc`, 'path_traversal'],
      ['..; path parameter', () => `/events/bda/${wfA}/svc/..;/..;/${wfB}/svc`, 'path_traversal'],
      ['%2f', () => `/events/bda/${wfA}/svc%2f..%2f..%2f${wfB}%2fsvc/hello`, 'encoded_separator'],
      ['%2F in the workflow id', () => `/events/bda/${wfA}%2F..%2F${wfB}/svc/hello`, 'encoded_separator'],
      ['%5c', () => `/events/bda/${wfA}/svc/..%5c..%5c${wfB}/svc`, 'encoded_separator'],
      ['//', () => `/events/bda//${wfB}/svc/hello`, 'empty_path_segment'],
      ['// after the service', () => `/events/bda/${wfA}/svc//${wfB}/svc`, 'empty_path_segment'],
      ['backslashes', () => `/events/bda/${wfA}/svc\\..\\..\\${wfB}\\svc`, 'backslash_in_path'],
      [
        'overlong UTF-8 %c0%ae',
        () => `/events/bda/${wfA}/svc/%c0%ae%c0%ae/%c0%ae%c0%ae/${wfB}/svc`,
        'invalid_path_encoding',
      ],
      [
        'overlong UTF-8 %e0%80%ae',
        () => `/events/bda/${wfA}/svc/%e0%80%ae%e0%80%ae/${wfB}`,
        'invalid_path_encoding',
      ],
      ['%c0%af overlong slash', () => `/events/bda/${wfA}/svc/..%c0%af${wfB}`, 'invalid_path_encoding'],
      [
        'double encoding %252e',
        () => `/events/bda/${wfA}/svc/%252e%252e/%252e%252e/${wfB}/svc`,
        'double_encoded_path',
      ],
      ['a service id of ..', () => `/events/bda/${wfA}/../svc/hello`, 'path_traversal'],
      ['a service id of %2e%2e', () => `/events/bda/${wfA}/%2e%2e/${wfB}/svc`, 'path_traversal'],
      ['a service id of .', () => `/events/bda/${wfA}/./hello`, 'path_traversal'],
    ])('%s → 400', async (_trick, path, code) => {
      const answer = await send(gw.url, path(), { headers: apikey(bdaA) });
      expectRefused(answer, 400, code);
      expect(answer.json.field).toBe('path');
    });

    it('an unknown service of its own workflow is 404', async () => {
      expectRefused(
        await send(gw.url, `/events/bda/${wfA}/nope/hello`, { headers: apikey(bdaA) }),
        404,
        'unknown_service',
      );
    });

    it('an id that cannot be a workflow id is 400', async () => {
      expectRefused(
        await send(gw.url, `/events/bda/${wfA}/svc%3Aother/hello`, { headers: apikey(bdaA) }),
        400,
        'invalid_identifier',
      );
    });
  });

  describe('platform roles and modules', () => {
    it('a viewer key may GET', async () => {
      const answer = await send(gw.url, '/events/platform/api/v1/datasets/7?q=a%20b', {
        headers: apikey(platformViewer),
      });
      expect(answer.status).toBe(200);
      expect(upstream.seen.map((s) => `${s.method} ${s.url}`)).toEqual(['GET /api/v1/datasets/7?q=a%20b']);
    });

    it.each(['PUT', 'POST'])('a viewer key trying %s → 403 role_not_allowed', async (method) => {
      expectRefused(
        await send(gw.url, '/events/platform/api/v1/datasets', {
          method,
          headers: apikey(platformViewer),
          body: '{}',
        }),
        403,
        'role_not_allowed',
      );
    });

    it.each([
      ['X-HTTP-Method-Override', { 'x-http-method-override': 'DELETE' }, '', 'x-http-method-override'],
      ['X-HTTP-Method', { 'x-http-method': 'PATCH' }, '', 'x-http-method'],
      ['X-Method-Override', { 'x-method-override': 'DELETE' }, '', 'x-method-override'],
      ['a _method parameter', {}, '?_method=DELETE', '_method'],
      ['a _METHOD parameter among others', {}, '?a=1&_METHOD=delete', '_method'],
    ])(
      'an editor key asking for another method with %s → 400 method_override, never passed on',
      async (_, headers, query, field) => {
        const { key } = await createKey(r, 'platform', ['datasets:editor']);
        const answer = await send(gw.url, `/events/platform/api/v1/datasets/7${query}`, {
          method: 'POST',
          headers: { ...apikey(key), ...headers },
          body: '{}',
        });
        expectRefused(answer, 400, 'method_override');
        expect(answer.json.field).toBe(field);
        expect(answer.json.error).toMatch(/send the call with the method you mean/);
      },
    );

    const multipart = (name: string): string =>
      `--b\r\nContent-Disposition: form-data; name="title"\r\n\r\nx\r\n` +
      `--b\r\nContent-Disposition: form-data; name="${name}"\r\n\r\nDELETE\r\n--b--\r\n`;
    it.each([
      ['a form', 'application/x-www-form-urlencoded', 'title=x&_method=DELETE'],
      ['a form PHP reads as _method', 'application/x-www-form-urlencoded', 'title=x&.method=DELETE'],
      ['a body without a Content-Type (Rack reads it as a form)', undefined, 'title=x&_method=DELETE'],
      ['a multipart form', 'multipart/form-data; boundary=b', multipart('_method')],
      [
        'a multipart part named with an RFC 2047 encoded-word (Tomcat decodes it)',
        'multipart/form-data; boundary=b',
        multipart('=?UTF-8?B?X21ldGhvZA==?='),
      ],
      ['JSON', 'application/json; charset=utf-8', '{"title":"x","_method":"DELETE"}'],
      ['JSON as Laravel reads it (its type mentions json)', 'text/plain; x=/json', '{"_method":"DELETE"}'],
    ])(
      'an editor key POSTing %s with a _method field → 400 method_override, never passed on',
      async (_, type, body) => {
        const { key } = await createKey(r, 'platform', ['datasets:editor']);
        for (const chunked of [false, true]) {
          const answer = await send(gw.url, '/events/platform/api/v1/datasets/7', {
            method: 'POST',
            headers: { ...apikey(key), ...(type === undefined ? {} : { 'content-type': type }) },
            body: chunked
              ? (async function* () {
                  yield Buffer.from(body);
                })()
              : body,
          });
          expectRefused(answer, 400, 'method_override');
          expect(answer.json.field).toBe('_method');
          expect(answer.json.error).toMatch(/the body's ".method" field asks the resource/);
        }
      },
    );

    it('a form, a multipart form and JSON without one reach the resource whole, by length or in chunks', async () => {
      const { key } = await createKey(r, 'platform', ['datasets:editor']);
      const bodies: Array<[string, string]> = [
        ['application/x-www-form-urlencoded', 'title=x&method=card'],
        ['multipart/form-data; boundary=b', multipart('payment_method')],
        ['application/json', '{"method":"card","note":"_method"}'],
      ];
      for (const [type, body] of bodies) {
        for (const chunked of [false, true]) {
          upstream.seen.length = 0;
          const answer = await send(gw.url, '/events/platform/api/v1/datasets', {
            method: 'POST',
            headers: { ...apikey(key), 'content-type': type },
            body: chunked
              ? (async function* () {
                  yield Buffer.from(body.slice(0, 5));
                  yield Buffer.from(body.slice(5));
                })()
              : body,
          });
          expect(answer.status).toBe(200);
          expect(upstream.seen.map((s) => [s.method, s.headers['content-type'], s.body.toString()])).toEqual([
            ['POST', type, body],
          ]);
          expect(Number(upstream.seen[0]?.headers['content-length'])).toBe(Buffer.byteLength(body));
        }
      }
    });

    it('a form body past the body limit → 413, never passed on', async () => {
      const { key } = await createKey(r, 'platform', ['datasets:editor']);
      const answer = await send(gw.url, '/events/platform/api/v1/datasets', {
        method: 'POST',
        headers: { ...apikey(key), 'content-type': 'application/x-www-form-urlencoded' },
        body: (async function* () {
          yield Buffer.from(`title=${'x'.repeat(1000)}`);
          yield Buffer.from(`&more=${'y'.repeat(1000)}`);
        })(),
      });
      expectRefused(answer, 413, 'body_too_large');
    });

    it('two Content-Types, one the Connection header drops, or a compressed form → refused, never passed on', async () => {
      const { key } = await createKey(r, 'platform', ['datasets:editor']);
      const body = '_method=DELETE';
      const text = await rawExchange(
        `POST /events/platform/api/v1/datasets/7 HTTP/1.1\r\nHost: gw\r\nAuthorization: Apikey ${key}\r\n` +
          `Content-Type: application/octet-stream\r\nContent-Type: application/x-www-form-urlencoded\r\n` +
          `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      );
      expect(text).toMatch(/^HTTP\/1\.1 400 /);
      expect(text).toMatch(/"code":"bad_request"/);
      expect(text).toMatch(/more than one Content-Type/);
      // A Content-Type the Connection header drops: the upstream gets none, and reads a form.
      const dropped = await rawExchange(
        `POST /events/platform/api/v1/datasets/7 HTTP/1.1\r\nHost: gw\r\nAuthorization: Apikey ${key}\r\n` +
          `Content-Type: text/plain\r\nConnection: close, content-type\r\n` +
          `Content-Length: ${body.length}\r\n\r\n${body}`,
      );
      expect(dropped).toMatch(/^HTTP\/1\.1 400 /);
      expect(dropped).toMatch(/"code":"method_override"/);
      // A compressed form the gateway cannot read: refused, not passed on unread.
      const zipped = await send(gw.url, '/events/platform/api/v1/datasets/7', {
        method: 'POST',
        headers: {
          ...apikey(key),
          'content-type': 'application/x-www-form-urlencoded',
          'content-encoding': 'gzip',
        },
        body: gzipSync(body),
      });
      expect([zipped.status, zipped.json.code, zipped.json.field]).toEqual([
        415,
        'unsupported_media_type',
        'content-encoding',
      ]);
      expect(upstream.seen).toEqual([]);
    });

    it('a workflow call keeps its method-override header: a workflow key is for every method', async () => {
      const answer = await send(gw.url, `/events/bda/${wfA}/svc/hello?_method=PUT`, {
        method: 'POST',
        headers: { ...apikey(bdaA), 'x-http-method-override': 'PUT' },
        body: '{}',
      });
      expect(answer.status).toBe(200);
      expect(upstream.seen.map((s) => [s.method, s.url, s.headers['x-http-method-override']])).toEqual([
        ['POST', '/a/hello?_method=PUT', 'PUT'],
      ]);
    });

    it.each(['DELETE', 'PATCH', 'OPTIONS'])('%s on a platform resource → 405 with Allow', async (method) => {
      const answer = await send(gw.url, '/events/platform/api/v1/datasets/7', {
        method,
        headers: apikey(platformViewer),
      });
      expectRefused(answer, 405, 'method_not_allowed');
      expect(answer.headers.allow).toBe('GET, PUT, POST');
    });

    it('an unknown resource is 404', async () => {
      expectRefused(
        await send(gw.url, '/events/platform/api/v1/secrets', { headers: apikey(platformViewer) }),
        404,
        'unknown_resource',
      );
    });

    it('a resource-scoped role does not reach another resource', async () => {
      const { key } = await createKey(r, 'platform', ['services:editor']);
      expectRefused(
        await send(gw.url, '/events/platform/api/v1/datasets', {
          method: 'POST',
          headers: apikey(key),
          body: '{}',
        }),
        403,
        'role_not_allowed',
      );
    });

    it('a platform key on a workflow → 403 module_mismatch', async () => {
      expectRefused(
        await send(gw.url, `/events/bda/${wfA}/svc/hello`, { headers: apikey(platformViewer) }),
        403,
        'module_mismatch',
      );
    });

    it('a bda key on a platform resource → 403 module_mismatch', async () => {
      expectRefused(
        await send(gw.url, '/events/platform/api/v1/datasets', { headers: apikey(bdaA) }),
        403,
        'module_mismatch',
      );
    });

    it('a bda key whose role names a platform resource still cannot reach it', async () => {
      const { key } = await createKey(r, 'bda', ['datasets']);
      expectRefused(
        await send(gw.url, '/events/platform/api/v1/datasets', { headers: apikey(key) }),
        403,
        'module_mismatch',
      );
    });
  });

  describe('request framing', () => {
    it('refuses Content-Length with Transfer-Encoding (request smuggling) with 400 and sends nothing on', async () => {
      const answer = await rawExchange(
        `POST /events/bda/${wfA}/svc/x HTTP/1.1\r\nHost: t\r\nAuthorization: Apikey ${bdaA}\r\n` +
          'Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /events/bda/other/svc/x HTTP/1.1\r\n\r\n',
      );
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('"code":"bad_request"');
      expect(upstream.seen).toEqual([]);
    });

    it('answers what Node would answer bare (no Host, an unknown expectation, CONNECT) as every error: JSON with a code', async () => {
      const cases: Array<[string, string, string, string]> = [
        [
          `GET /events/bda/${wfA}/svc/x HTTP/1.1\r\nAuthorization: Apikey ${bdaA}\r\n\r\n`,
          '400',
          'bad_request',
          'needs a Host header',
        ],
        [
          `POST /events/bda/${wfA}/svc/x HTTP/1.1\r\nHost: t\r\nAuthorization: Apikey ${bdaA}\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}`,
          '417',
          'expectation_failed',
          'no expectation but 100-continue',
        ],
        [
          'CONNECT upstream.example:443 HTTP/1.1\r\nHost: upstream.example:443\r\n\r\n',
          '405',
          'method_not_allowed',
          'no forward proxy',
        ],
      ];
      for (const [request, status, code, says] of cases) {
        const answer = await rawExchange(request);
        expect(answer.slice(0, 12)).toBe(`HTTP/1.1 ${status}`);
        expect(answer).toMatch(/content-type: application\/json/i);
        expect(answer).toContain(`"code":"${code}"`);
        expect(answer).toContain(says);
      }
      expect(upstream.seen).toEqual([]);
    });

    it('refuses two Authorization headers (a proxy in front may read the other one), sending nothing on', async () => {
      for (const second of ['Authorization: Basic c2VjcmV0', `authorization: Apikey ${bdaA}`]) {
        const answer = await rawExchange(
          `GET /events/bda/${wfA}/svc/x HTTP/1.1\r\nHost: t\r\nAuthorization: Apikey ${bdaA}\r\n` +
            `${second}\r\nConnection: close\r\n\r\n`,
        );
        expect(answer).toMatch(/^HTTP\/1\.1 401 /);
        expect(answer).toContain('"code":"malformed_authorization"');
        expect(answer).toContain('the request carries 2 Authorization headers');
      }
      expect(upstream.seen).toEqual([]);
    });
  });

  describe('sizes', () => {
    it('64 KiB of headers → 431 headers_too_large', async () => {
      const answer = await send(gw.url, `/events/bda/${wfA}/svc/hello`, {
        headers: { ...apikey(bdaA), 'x-padding': 'p'.repeat(64 * 1024) },
      });
      expectRefused(answer, 431, 'headers_too_large');
    });

    it('a declared body over the limit → 413 before anything goes upstream', async () => {
      const answer = await send(gw.url, `/events/bda/${wfA}/svc/upload`, {
        method: 'POST',
        headers: { ...apikey(bdaA), 'content-type': 'application/octet-stream' },
        body: Buffer.alloc(4096, 1),
      });
      expectRefused(answer, 413, 'body_too_large');
      expect(upstream.aborted).toBe(0);
    });

    it('a chunked body growing over the limit → 413, and the upstream never gets a complete request', async () => {
      async function* chunks(): AsyncGenerator<Buffer> {
        for (let i = 0; i < 8; i++) {
          yield Buffer.alloc(512, 2);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
      const answer = await send(gw.url, `/events/bda/${wfA}/svc/upload`, {
        method: 'POST',
        headers: apikey(bdaA),
        body: chunks(),
      });
      expectRefused(answer, 413, 'body_too_large');
    });

    it('a body within the limit passes whole', async () => {
      const body = Buffer.alloc(1000, 3);
      const answer = await send(gw.url, `/events/bda/${wfA}/svc/upload`, {
        method: 'POST',
        headers: apikey(bdaA),
        body,
      });
      expect(answer.status).toBe(200);
      expect(upstream.seen[0]?.body.equals(body)).toBe(true);
    });
  });
});
