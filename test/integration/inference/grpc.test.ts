import { cp, mkdtemp, mkdir, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { connect as netConnect, type Socket } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { protocolTypes } from '../../../gateway/grpc/protocol.js';
import { modelManifest } from '../../builders/resources.js';
import { InferenceClient, refusal, tritonGrpc } from '../../harness/grpc-clients.js';
import { tritonGrpcRefusals } from '../../harness/grpc-expectations.js';
import { freePort, redis } from '../../harness/index.js';
import { venvPaths } from '../../harness/venv.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startDev, until, type Dev } from './dev-process.js';
import { trainExamples } from './stack.js';

/**
 * The Open Inference Protocol's gRPC form through `tollgate dev`'s gateway, with the official
 * client (tritonclient.grpc) against real MLServer runtimes: the same keys, request checks,
 * versions and codes as over REST.
 */
describe('V2 inference over gRPC (standalone)', () => {
  let work: string;
  let state: string;
  let dev: Dev | undefined;
  let grpcPort: number;
  let key: string;
  let expected: number[];

  beforeAll(async () => {
    const r = await redis();
    work = await trainExamples(['iris']);
    for (const v of ['1', '2'])
      await cp(path.join(work, 'model-iris'), path.join(work, 'iris', v), { recursive: true });
    state = await mkdtemp(path.join(tmpdir(), 'tollgate-grpc-'));
    await mkdir(path.join(state, 'models'));
    await writeFile(
      path.join(state, 'models', 'model-iris.yaml'),
      modelManifest('model-iris', {
        versions: ['1', '2'].map((name) => ({ name, storageUri: `file://${path.join(work, 'iris', name)}` })),
        defaultVersion: '1',
        // Version 2 serves one customer's calls, every one of them, and no one else's.
        traffic: [{ version: '2', cohort: { identities: ['grpc-cohort'] } }],
      }),
    );
    grpcPort = await freePort();
    dev = await startDev(state, r.url, {
      built: true,
      env: {
        TOLLGATE_GRPC_PORT: String(grpcPort),
        // Long enough for five 9 MiB messages to arrive on a machine another test worker keeps
        // busy (each held one is cut at this time, and the fifth must find the first four held).
        TOLLGATE_REQUEST_BODY_TIMEOUT_MS: '5000',
        // 32 per client address.
        TOLLGATE_GRPC_MAX_CONNECTIONS: '128',
        // Keys with credits pay 2 a row of each batch (those without have nothing to spend).
        TOLLGATE_CREDIT_COSTS: 'model-iris=2/row',
      },
    });
    key = await dev.key(['models:inference']);
    const rows = {
      inputs: [
        { name: 'features', datatype: 'FP32', shape: [2, 4], data: [5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3] },
      ],
    };
    expected = await until('version 1 answers over REST', async () => {
      const res = await fetch(`${dev?.base}/v2/models/model-iris/infer`, {
        method: 'POST',
        headers: { authorization: `Apikey ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(rows),
      });
      if (res.status !== 200) return undefined;
      return ((await res.json()) as { outputs: Array<{ name: string; data: number[] }> }).outputs.find(
        (o) => o.name === 'predict',
      )?.data;
    });
    // Each version is its own runtime, started on its own: the tests call version 2 by name too.
    await until('version 2 answers over REST', async () => {
      const res = await fetch(`${dev?.base}/v2/models/model-iris/versions/2/infer`, {
        method: 'POST',
        headers: { authorization: `Apikey ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(rows),
      });
      await res.arrayBuffer();
      return res.status === 200 ? true : undefined;
    });
  }, 300_000);

  afterAll(async () => {
    await dev?.stop();
    for (const dir of [state, work]) if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  test('tritonclient.grpc: health, metadata, raw tensors both ways, versions, and refusals with their codes', async () => {
    const got = await tritonGrpc(`127.0.0.1:${grpcPort}`, 'model-iris', key, '2');
    expect([got.live, got.ready, got.model_ready]).toEqual([true, true, true]);
    expect(got.server.name).toBe('tollgate');
    expect(got.metadata.name).toBe('model-iris');
    expect(got.metadata.inputs[0]?.datatype).toBe('FP32');
    expect(got.id).toBe('grpc-1');
    expect(got.model_name).toBe('model-iris');
    expect(got.predict).toEqual(expected);
    expect(got.proba_shape).toEqual([2, 3]);
    // No outputs named: what the runtime answers by default, as over REST.
    expect(got.every_outputs).toEqual(['predict']);
    expect(got.versioned).toEqual({ model_version: '2', predict: expected, ready: true });
    expect(got.refused).toEqual(tritonGrpcRefusals(true));
  });

  describe('what the official client does not send', () => {
    let client: InferenceClient;
    const rows = [5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3];
    const raw = Buffer.from(new Float32Array(rows).buffer);
    const features = (extra: Record<string, unknown> = {}) => ({
      name: 'features',
      datatype: 'FP32',
      shape: [2, 4],
      ...extra,
    });
    const call = (
      method: string,
      request: Record<string, unknown>,
      headers: Record<string, string> = { authorization: `Apikey ${key}` },
    ) => client.call(method, request, headers);
    const predictions = (value: Record<string, unknown> | undefined): number[] => {
      const outputs = value?.outputs as Array<{ name: string; datatype: string }>;
      const at = outputs.findIndex((o) => o.name === 'predict');
      const bytes = (value?.raw_output_contents as Buffer[])[at] as Buffer;
      expect(outputs[at]?.datatype).toBe('INT64');
      return Array.from({ length: bytes.length / 8 }, (_, i) => Number(bytes.readBigInt64LE(i * 8)));
    };

    beforeAll(() => {
      client = new InferenceClient(`127.0.0.1:${grpcPort}`);
    });
    afterAll(() => client?.close());

    test("a cohort's caller is served its version over gRPC as over REST; every other caller the default", async () => {
      const made = await fetch(`${dev?.base}/api/v1/identities`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await dev!.token()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'grpc-cohort' }),
      });
      expect(made.status).toBe(201);
      const customer = await dev!.key(['models:inference'], 'platform', { identity: 'grpc-cohort' });
      const versionsServed = async (k: string): Promise<string[]> => {
        const got: string[] = [];
        for (let i = 0; i < 6; i++) {
          const answer = await call(
            'ModelInfer',
            { model_name: 'model-iris', inputs: [features()], raw_input_contents: [raw] },
            { authorization: `Apikey ${k}` },
          );
          expect(answer.error).toBeUndefined();
          got.push(String(answer.value?.model_version));
        }
        return [...new Set(got)];
      };
      expect(await versionsServed(customer)).toEqual(['2']);
      expect(await versionsServed(key)).toEqual(['1']);
    });

    test('typed contents answer as raw tensors do; the request id comes back in the headers', async () => {
      const typed = await call(
        'ModelInfer',
        { model_name: 'model-iris', inputs: [features({ contents: { fp32_contents: rows } })] },
        { authorization: `Apikey ${key}`, 'x-request-id': 'grpc-typed-1' },
      );
      expect(typed.error).toBeUndefined();
      expect(predictions(typed.value)).toEqual(expected);
      expect(typed.header?.get('x-request-id')).toEqual(['grpc-typed-1']);
      const rawCall = await call('ModelInfer', {
        model_name: 'model-iris',
        inputs: [features()],
        raw_input_contents: [raw],
      });
      expect(predictions(rawCall.value)).toEqual(expected);
    });

    test('a call refused before its handler (no key, an unknown one) carries its request id and is counted as REST refusals are', async () => {
      const series = async (name: string): Promise<number> => {
        const text = await (await fetch(`${dev?.base}/metrics`)).text();
        const line = text.split('\n').find((l) => l.startsWith(`${name} `));
        return line === undefined ? 0 : Number(line.split(' ').at(-1));
      };
      const refused = 'tollgate_gateway_requests_total{kind="v2",status="401",module="none"}';
      const before = await series(refused);
      const missing = await call('ModelReady', { name: 'model-iris' }, { 'x-request-id': 'grpc-refused-1' });
      expect(missing.error?.code).toBe(16);
      expect(missing.error?.metadata.get('x-request-id')).toEqual(['grpc-refused-1']);
      const unknown = await call(
        'ModelReady',
        { name: 'model-iris' },
        { authorization: `Apikey ${'tgp_' + 'x'.repeat(40)}` },
      );
      expect(unknown.error?.code).toBe(16);
      // None given: one made for it, as REST makes one.
      expect(unknown.error?.metadata.get('x-request-id')[0]).toMatch(/^[0-9a-f-]{36}$/);
      expect((await series(refused)) - before).toBe(2);
    });

    test('malformed tensors are refused with the field at fault, after the key is checked', async () => {
      const cases: Array<[Record<string, unknown>, string, RegExp]> = [
        [
          { inputs: [features()], raw_input_contents: [raw, raw] },
          'invalid_binary_data',
          /2 entries for 1 inputs/,
        ],
        [
          { inputs: [features({ contents: { fp32_contents: rows } })], raw_input_contents: [raw] },
          'invalid_binary_data',
          /send every input one way/,
        ],
        [
          { inputs: [features({ contents: { int_contents: [1, 2] } })] },
          'invalid_binary_data',
          /fp32_contents, not contents.int_contents/,
        ],
        [
          { inputs: [features()], raw_input_contents: [raw.subarray(0, 12)] },
          'shape_data_mismatch',
          /needs 8 FP32 values/,
        ],
        [
          { inputs: [features({ datatype: 'FP99', contents: { fp32_contents: rows } })] },
          'invalid_datatype',
          /not a V2 datatype/,
        ],
        [{ inputs: [] }, 'missing_inputs', /./],
      ];
      for (const [request, code, message] of cases) {
        const r = await call('ModelInfer', { model_name: 'model-iris', ...request });
        expect(refusal(r)).toEqual([3, code, code]);
        expect(r.error?.details).toMatch(message);
      }
      // The same malformed request without a key: the key is what is wrong with it.
      const anonymous = await call(
        'ModelInfer',
        { model_name: 'model-iris', inputs: [features()], raw_input_contents: [raw, raw] },
        {},
      );
      expect(refusal(anonymous)).toEqual([16, 'missing_api_key', 'missing_api_key']);
    });

    test('no name crosses to another path, and a key outside its role or scope is refused', async () => {
      for (const model_name of [
        'model-iris/../x',
        '../v2/models/model-iris',
        'model-iris%2Finfer',
        'model-iris/versions/2',
      ]) {
        const r = await call('ModelInfer', { model_name, inputs: [features()], raw_input_contents: [raw] });
        expect(refusal(r)).toEqual([5, 'model_not_found', 'model_not_found']);
      }
      for (const model_version of ['../1', '2/infer', '%32']) {
        const r = await call('ModelInfer', {
          model_name: 'model-iris',
          model_version,
          inputs: [features()],
          raw_input_contents: [raw],
        });
        expect(refusal(r)).toEqual([5, 'model_version_not_found', 'model_version_not_found']);
      }
      const empty = await call('ModelInfer', { inputs: [features()], raw_input_contents: [raw] });
      expect(refusal(empty)).toEqual([3, 'invalid_field', 'invalid_field']);
      const viewer = await dev?.key(['models:viewer']);
      const denied = await call(
        'ModelInfer',
        { model_name: 'model-iris', inputs: [features()], raw_input_contents: [raw] },
        { authorization: `Apikey ${viewer ?? ''}` },
      );
      expect(refusal(denied)).toEqual([7, 'model_access_denied', 'model_access_denied']);
      // A bad name from a caller without a key learns nothing but that.
      const anonymous = await call('ModelMetadata', { name: '../../etc' }, {});
      expect(refusal(anonymous)).toEqual([16, 'missing_api_key', 'missing_api_key']);
    });

    test('a model priced per row spends its price per row of the batch, and a batch that costs more than is left is refused before the runtime', async () => {
      const paying = await dev?.key(['models:inference'], 'platform', { credits: { amount: 12 } });
      const batch = (n: number) =>
        call(
          'ModelInfer',
          {
            model_name: 'model-iris',
            inputs: [features({ shape: [n, 4] })],
            raw_input_contents: [
              Buffer.from(new Float32Array(Array.from({ length: n }, () => rows.slice(0, 4)).flat()).buffer),
            ],
          },
          { authorization: `Apikey ${paying ?? ''}` },
        );
      expect((await batch(2)).error).toBeUndefined(); // 4
      expect((await batch(3)).error).toBeUndefined(); // 10
      const short = await batch(2); // 14 > 12
      expect(refusal(short)).toEqual([8, 'credits_exhausted', 'credits_exhausted']);
      expect(short.error?.details).toBe(
        "credits_exhausted: this key's 12 credits are spent (this batch of 2 rows at 2 credits a row costs 4; 2 left); an administrator can add more",
      );
      // What is left still buys a batch that fits it.
      expect((await batch(1)).error).toBeUndefined(); // 12
      expect(refusal(await batch(1))).toEqual([8, 'credits_exhausted', 'credits_exhausted']);
      // The rows of the admitted batches, in the key's usage (flushed each second).
      const token = (await dev?.token()) ?? '';
      await until('the rows are in the key usage', async () => {
        const listed = await fetch(`${dev?.base}/api/v1/apikeys`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const items = ((await listed.json()) as { items: Array<{ start: string; rowCount: number }> }).items;
        const mine = items.find((k) => paying?.startsWith(k.start) === true);
        return mine?.rowCount === 6 ? true : undefined;
      });
    });

    test('the caller is who grpc-js says it is: a key held to other networks is refused here, one held to loopback passes', async () => {
      const elsewhere = await dev?.key(['models:inference'], 'platform', { allowedCidrs: ['10.0.0.0/8'] });
      const refused = await call(
        'ModelInfer',
        { model_name: 'model-iris', inputs: [features()], raw_input_contents: [raw] },
        { authorization: `Apikey ${elsewhere ?? ''}` },
      );
      expect(refusal(refused)).toEqual([7, 'address_not_allowed', 'address_not_allowed']);
      expect(refused.error?.details).toMatch(/from 127\.0\.0\.1/);
      const here = await dev?.key(['models:inference'], 'platform', { allowedCidrs: ['127.0.0.0/8'] });
      const ok = await call(
        'ModelInfer',
        { model_name: 'model-iris', inputs: [features()], raw_input_contents: [raw] },
        { authorization: `Apikey ${here ?? ''}` },
      );
      expect(predictions(ok.value)).toEqual(expected);
    });

    test('a key is checked before the message is read, and a message that would decode into too much is not decoded', async () => {
      // 8 MiB from a caller with no key: refused for the key, not weighed or decoded.
      const anonymous = await call(
        'ModelInfer',
        {
          model_name: 'model-iris',
          inputs: [features({ shape: [524_288, 4] })],
          raw_input_contents: [Buffer.alloc(8 << 20)],
        },
        {},
      );
      expect(refusal(anonymous)).toEqual([16, 'missing_api_key', 'missing_api_key']);
      const wrong = await call(
        'ModelInfer',
        { model_name: 'model-iris' },
        { authorization: 'Apikey tg_nothing' },
      );
      expect(refusal(wrong)[0]).toBe(16);
      // A million empty inputs: 2 MB on the wire, hundreds of megabytes decoded.
      const empties = await call('ModelInfer', {
        model_name: 'model-iris',
        inputs: Array.from({ length: 1_000_000 }, () => ({})),
      });
      expect(refusal(empties)).toEqual([8, 'body_too_large', 'body_too_large']);
      expect(empties.error?.details).toMatch(/raw_input_contents/);
      // The gateway is still there and answers.
      const after = await call('ModelInfer', {
        model_name: 'model-iris',
        inputs: [features()],
        raw_input_contents: [raw],
      });
      expect(predictions(after.value)).toEqual(expected);
    });

    test('what a caller names is sent back safely, and a message framed against its type is refused, never decoded', async () => {
      // A name grpc-js could not put in a status as it came (an emoji cut at the limit, non-ASCII).
      const odd = await call('ModelReady', { name: `${'a'.repeat(99)}😀`, version: '' });
      expect(refusal(odd)).toEqual([5, 'model_not_found', 'model_not_found']);
      const accent = await call('ModelInfer', {
        model_name: 'model-iris',
        inputs: [{ name: 'é', datatype: 'FP32', shape: [1], contents: { int_contents: [1] } }],
      });
      expect(refusal(accent)).toEqual([3, 'invalid_binary_data', 'invalid_binary_data']);
      expect(accent.error?.metadata.get('tollgate-field')).toEqual([
        'inputs%5B%C3%A9%5D.contents.int_contents',
      ]);
      // Field 5 (inputs) as a varint, then bytes a decoder would take for a million shape values.
      const framed = await client.callRaw(
        'ModelInfer',
        Buffer.concat([Buffer.from([0x28, 0x05]), Buffer.alloc(64, 0x18)]),
        {
          authorization: `Apikey ${key}`,
        },
      );
      expect(refusal(framed)).toEqual([3, 'bad_request', 'bad_request']);
      // The gateway is up and answers.
      const after = await call('ModelInfer', {
        model_name: 'model-iris',
        inputs: [features()],
        raw_input_contents: [raw],
      });
      expect(predictions(after.value)).toEqual(expected);
    });

    test('a message never closed is cut at the body time, as a slow REST body is; an open method never waits for one', async () => {
      const stalled = await client.stalled('ModelInfer', Buffer.alloc(0), { authorization: `Apikey ${key}` });
      expect(refusal(stalled)).toEqual([4, 'request_timeout', 'request_timeout']);
      // An open method is answered from its metadata alone: had it waited for its message, it too
      // would end in request_timeout.
      const open = await client.stalled('ServerLive', Buffer.alloc(0), {});
      expect(open.error).toBeUndefined();
    });

    test('one owner’s keys hold at most 256 gRPC calls of a replica, messages still arriving included; another owner’s calls still go through', async () => {
      // A connection carries 128 calls at most: vera's come over three, each on its own one.
      const connections = Array.from(
        { length: 3 },
        () => new InferenceClient(`127.0.0.1:${grpcPort}`, { ownConnection: true }),
      );
      try {
        // vera opens 256 calls (with two keys of hers) and never closes their messages.
        const second = await dev!.key(['models:inference']);
        const held = Array.from({ length: 256 }, (_, i) =>
          (connections[i % 3] as InferenceClient).stalled('ModelInfer', Buffer.alloc(0), {
            authorization: `Apikey ${i % 2 ? key : second}`,
          }),
        );
        const turned = await until(
          'her 257th call is refused',
          async () => {
            const r = await call('ModelInfer', {
              model_name: 'model-iris',
              inputs: [features()],
              raw_input_contents: [raw],
            });
            return r.error?.code === 8 ? r : undefined;
          },
          1_500,
        );
        expect(refusal(turned)).toEqual([8, 'too_many_calls', 'too_many_calls']);
        expect(turned.error?.details).toMatch(
          /your keys have 256 calls in flight on this replica \(REST and gRPC together\)/,
        );
        // walt's call is answered beside them.
        const walt = await dev!.key(['models:inference'], 'platform', {}, 'walt');
        const other = await call(
          'ModelInfer',
          { model_name: 'model-iris', inputs: [features()], raw_input_contents: [raw] },
          { authorization: `Apikey ${walt}` },
        );
        expect(predictions(other.value)).toEqual(expected);
        // Once hers are cut at the body time, vera's calls go through again.
        for (const h of await Promise.all(held))
          expect(refusal(h)).toEqual([4, 'request_timeout', 'request_timeout']);
        const again = await call('ModelInfer', {
          model_name: 'model-iris',
          inputs: [features()],
          raw_input_contents: [raw],
        });
        expect(predictions(again.value)).toEqual(expected);
      } finally {
        for (const c of connections) c.close();
      }
    });

    test('one owner’s calls hold at most four body limits of messages not yet answered: the fifth is refused, not held', async () => {
      // Messages of 9 MiB sent and never closed (a gzip frame of kilobytes inflates to as much):
      // each would be held for the body time, and a few hundred would fill the replica.
      const big = Buffer.alloc(9 * 1024 * 1024, 0x20);
      const connections = Array.from(
        { length: 5 },
        () => new InferenceClient(`127.0.0.1:${grpcPort}`, { ownConnection: true }),
      );
      try {
        const held = await Promise.all(
          connections.map((c) => c.stalled('ModelInfer', big, { authorization: `Apikey ${key}` })),
        );
        const refused = held.filter((h) => h.error?.code === 8);
        expect(refused.map(refusal)).toEqual([[8, 'rate_limited', 'rate_limited']]);
        expect(refused[0]?.error?.details).toMatch(
          /your keys' calls hold 37748736 bytes of this replica's memory .* close each call's stream once its message is sent$/,
        );
        // The four held are cut at the body time, and the room comes back.
        expect(held.filter((h) => h.error?.code === 4)).toHaveLength(4);
        const again = await call('ModelInfer', {
          model_name: 'model-iris',
          inputs: [features()],
          raw_input_contents: [raw],
        });
        expect(predictions(again.value)).toEqual(expected);
      } finally {
        for (const c of connections) c.close();
      }
    });

    test('a call carrying two keys is refused, as REST refuses two Authorization headers (grpcio sends both; Node keeps the first)', async () => {
      const script = [
        'import grpc, sys',
        'call = grpc.insecure_channel(sys.argv[1]).unary_unary("/inference.GRPCInferenceService/ModelReady")',
        'keys = sys.argv[2:]',
        'try:',
        '    call(b"", metadata=[("authorization", "Apikey " + k) for k in keys], timeout=20)',
        '    print("OK")',
        'except grpc.RpcError as e:',
        '    print(e.code().name, e.details())',
      ].join('\n');
      const walt = await dev!.key(['models:inference'], 'platform', {}, 'walt');
      const run = async (...keys: string[]): Promise<string> =>
        (
          await promisify(execFile)(venvPaths().python, ['-c', script, `127.0.0.1:${grpcPort}`, ...keys])
        ).stdout.trim();
      // One key: it passes, and the empty request is refused for what it lacks.
      expect(await run(key)).toMatch(/^INVALID_ARGUMENT invalid_field: model_name is empty/);
      // Two, of two owners: neither is taken.
      expect(await run(walt, key)).toMatch(
        /^UNAUTHENTICATED malformed_authorization: the call carries 2 authorization entries/,
      );
      expect(await run(key, key)).toMatch(/^UNAUTHENTICATED malformed_authorization/);
    });

    test('one client address holds at most a quarter of the port’s connections, with or without a call; closed ones give their place back', async () => {
      // Another loopback address than the test's clients: what it holds is its own share.
      const open = (i: number) => {
        const socket = netConnect({ port: grpcPort, host: '127.0.0.1', localAddress: '127.0.0.2' });
        socket.on('error', () => undefined);
        // Half send HTTP/2's preface and settings, and then nothing; no call begins on either.
        if (i % 2 === 0)
          socket.write(
            Buffer.concat([
              Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
              Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
            ]),
          );
        let closed = false;
        socket.once('close', () => (closed = true));
        return { socket, closed: () => closed };
      };
      const held = Array.from({ length: 40 }, (_, i) => open(i));
      try {
        await sleep(500);
        // 32 kept, 8 closed as they came.
        expect(held.filter((h) => h.closed())).toHaveLength(8);
        // The test's own address is not held back by them.
        expect((await call('ServerLive', {})).value).toEqual({ live: true });
        // Its share is full: one more from it is closed too.
        const more = open(1);
        await sleep(300);
        expect(more.closed()).toBe(true);
      } finally {
        for (const h of held) h.socket.destroy();
      }
      await sleep(300);
      const again = open(1);
      try {
        await sleep(300);
        expect(again.closed()).toBe(false);
      } finally {
        again.socket.destroy();
      }
    });

    test('REST bodies and gRPC messages share one budget: an owner holding four body limits of REST bodies is refused on both, another owner is not', async () => {
      // Bodies of 9 MiB (under the 10 MiB limit) sent and never finished: each would be held for
      // the body time, and without a budget a few dozen would fill the replica.
      const nine = 9 * 1024 * 1024;
      const held = Array.from({ length: 4 }, () => stalledRest(dev!.base, key, nine + 1, nine));
      try {
        await Promise.all(held.map((h) => h.sent));
        await sleep(300);
        // The fifth is refused on its head, before a byte of its body is kept: its declared length
        // would pass her share. A real client, still sending, reads the 429 (the rest is dropped).
        const fifth = await fetch(`${dev!.base}/v2/models/model-iris/infer`, {
          method: 'POST',
          headers: { authorization: `Apikey ${key}`, 'content-type': 'application/json' },
          body: Buffer.alloc(nine + 1, 0x20),
        });
        expect(fifth.status).toBe(429);
        expect(fifth.headers.get('retry-after')).toBe('1');
        const body = (await fifth.json()) as { code: string; error: string };
        expect(body.code).toBe('rate_limited');
        expect(body.error).toMatch(
          /^your keys' calls hold 37748740 bytes of this replica's memory .* and this would take 9437185 more, past the 41943040 one owner may hold; wait for some of your calls to be answered/,
        );
        // Her gRPC message is refused from the same budget; walt's is answered.
        const grpcRefused = await call('ModelInfer', {
          model_name: 'model-iris',
          inputs: [features({ shape: [500_000, 4] })],
          raw_input_contents: [Buffer.alloc(8_000_000)],
        });
        expect(refusal(grpcRefused)).toEqual([8, 'rate_limited', 'rate_limited']);
        const walt = await dev!.key(['models:inference'], 'platform', {}, 'walt');
        const other = await call(
          'ModelInfer',
          { model_name: 'model-iris', inputs: [features()], raw_input_contents: [raw] },
          { authorization: `Apikey ${walt}` },
        );
        expect(predictions(other.value)).toEqual(expected);
        // The held bodies are cut at the body time (408), and what they held is given back.
        for (const h of held) expect((await h.answer).head).toMatch(/^HTTP\/1\.1 408 /);
      } finally {
        for (const h of held) h.socket.destroy();
      }
      const again = await fetch(`${dev?.base}/v2/models/model-iris/infer`, {
        method: 'POST',
        headers: { authorization: `Apikey ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [{ ...features(), data: rows }] }),
      });
      expect(again.status).toBe(200);
      await again.arrayBuffer();
    });

    test('a call given up while its model does not answer keeps its slot until the model has: giving up does not make room for more', async () => {
      const frozen = await runtimePids(state, 'model-iris-2');
      expect(frozen.length).toBeGreaterThan(0);
      const connections = Array.from(
        { length: 3 },
        () => new InferenceClient(`127.0.0.1:${grpcPort}`, { ownConnection: true }),
      );
      const auth = { authorization: `Apikey ${key}` };
      const toVersion2 = {
        model_name: 'model-iris',
        model_version: '2',
        inputs: [features()],
        raw_input_contents: [raw],
      };
      for (const pid of frozen) process.kill(pid, 'SIGSTOP');
      try {
        // 256 calls, each given up after 3 s while version 2 does not answer.
        const given = await Promise.all(
          Array.from({ length: 256 }, (_, i) =>
            (connections[i % 3] as InferenceClient).call('ModelInfer', toVersion2, auth, {
              deadlineMs: 3_000,
            }),
          ),
        );
        expect(new Set(given.map((g) => g.error?.code))).toEqual(new Set([4]));
        // Their requests to the model still run: her next call is refused, not let in beside them.
        const next = await call('ModelInfer', { ...toVersion2, model_version: '1' });
        expect(refusal(next)).toEqual([8, 'too_many_calls', 'too_many_calls']);
      } finally {
        for (const pid of frozen) process.kill(pid, 'SIGCONT');
      }
      try {
        // The model answers what was asked of it: every slot comes back, 256 calls at once pass.
        const again = await until(
          'her 256 slots are hers again',
          async () => {
            const burst = await Promise.all(
              Array.from({ length: 256 }, (_, i) =>
                (connections[i % 3] as InferenceClient).call(
                  'ModelInfer',
                  {
                    model_name: 'model-iris',
                    model_version: '1',
                    inputs: [features()],
                    raw_input_contents: [raw],
                  },
                  auth,
                ),
              ),
            );
            return burst.every((r) => r.value !== undefined) ? burst : undefined;
          },
          60_000,
        );
        expect(predictions(again[0]?.value)).toEqual(expected);
      } finally {
        for (const c of connections) c.close();
      }
    });

    test('the 256 include calls to a model of the owner’s own that never answers: it leaves room for everyone else', async () => {
      // vera's version 2 stops answering (its runtime frozen, as a model whose own code sleeps).
      const frozen = await runtimePids(state, 'model-iris-2');
      expect(frozen.length).toBeGreaterThan(0);
      // A connection carries 128 calls at most: hers come over three, each asked on its own one.
      const connections = Array.from(
        { length: 4 },
        () => new InferenceClient(`127.0.0.1:${grpcPort}`, { ownConnection: true }),
      );
      const auth = { authorization: `Apikey ${key}` };
      const toVersion2 = {
        model_name: 'model-iris',
        model_version: '2',
        inputs: [features()],
        raw_input_contents: [raw],
      };
      for (const pid of frozen) process.kill(pid, 'SIGSTOP');
      const held: Array<ReturnType<typeof call>> = [];
      try {
        for (let i = 0; i < 256; i++)
          held.push((connections[i % 3] as InferenceClient).call('ModelInfer', toVersion2, auth));
        const probe = connections[3] as InferenceClient;

        // Her next one is turned away once the 256 are all held (their messages arrived whole).
        // (A try made before the 256 are counted is held too, and answered once thawed.)
        const turned = await until(
          'the 257th call is refused',
          async () => {
            const next = probe.call('ModelInfer', toVersion2, auth);
            held.push(next);
            const r = await Promise.race([next, sleep(1_000).then(() => undefined)]);
            return r !== undefined && r.error?.code === 8 ? r : undefined;
          },
          30_000,
        );
        expect(refusal(turned)).toEqual([8, 'too_many_calls', 'too_many_calls']);
        expect(turned.error?.details).toMatch(
          /your keys have 256 calls in flight on this replica \(REST and gRPC together\)/,
        );
        // walt's call is answered beside them.
        const walt = await dev!.key(['models:inference'], 'platform', {}, 'walt');
        const other = await probe.call(
          'ModelInfer',
          { model_name: 'model-iris', inputs: [features()], raw_input_contents: [raw] },
          { authorization: `Apikey ${walt}` },
        );
        expect(predictions(other.value)).toEqual(expected);
      } finally {
        for (const pid of frozen) process.kill(pid, 'SIGCONT');
      }
      try {
        // Thawed: the 256 are answered, and her next call too.
        const answered = await Promise.all(held);
        for (const h of answered.slice(0, 256)) expect(predictions(h.value)).toEqual(expected);
        const again = await call('ModelInfer', {
          model_name: 'model-iris',
          inputs: [features()],
          raw_input_contents: [raw],
        });
        expect(predictions(again.value)).toEqual(expected);
      } finally {
        for (const c of connections) c.close();
      }
    }, 120_000);

    test('answers a caller does not read hold at most four body limits of a replica per owner; past that the answer is refused, not held', async () => {
      const rows = 500_000;
      const big = {
        model_name: 'model-iris',
        inputs: [features({ shape: [rows, 4] })],
        raw_input_contents: [Buffer.alloc(rows * 16)],
      };
      // vera's client reads nothing (a stream window of 0): each 4 MB answer stays in the gateway.
      const session = connect(`http://127.0.0.1:${grpcPort}`, { settings: { initialWindowSize: 0 } });
      const message = protocolTypes().lookupType('inference.ModelInferRequest').encode(big).finish();
      const framed = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), message]);
      framed.writeUInt32BE(message.length, 1);
      // One at a time, each answer's headers seen before the next call is opened: ten 8 MB
      // messages sent at once over one connection would not all arrive within the body time.
      const streams: ClientHttp2Stream[] = [];
      try {
        // Until one is refused: each sent answer (4 MB) stays held, and a call holds its message
        // (8 MB, counted once: the core's copy of its tensors is the same claim) while it is answered.
        let answered = 0;
        for (let i = 0; i < 10; i++) {
          const stream = session.request({
            ':method': 'POST',
            ':path': '/inference.GRPCInferenceService/ModelInfer',
            'content-type': 'application/grpc',
            te: 'trailers',
            authorization: `Apikey ${key}`,
          });
          stream.on('error', () => undefined);
          streams.push(stream);
          const heard = once(stream, 'response') as Promise<[IncomingHttpHeaders]>;
          stream.end(framed);
          const [headers] = await heard;
          expect(headers[':status']).toBe(200);
          // Refused: trailers only, with the status.
          if (headers['grpc-status'] !== undefined) {
            expect(headers['grpc-status']).toBe('8');
            break;
          }
          answered++;
        }
        // Within her 4 x 10 MiB: some answers held, never ten (40 MB of answers alone).
        expect(answered).toBeGreaterThanOrEqual(4);
        expect(answered).toBeLessThanOrEqual(9);
        // Past them, a large call is refused, not held, even from a client of hers that reads.
        const refused = await call('ModelInfer', big);
        expect(refusal(refused)).toEqual([8, 'rate_limited', 'rate_limited']);
        expect(refused.error?.details).toMatch(
          /your keys' calls hold \d+ bytes of this replica's memory .* past the 41943040 one owner may hold/,
        );
        // A small answer still fits; walt's large one is answered beside hers.
        const small = await call('ModelInfer', {
          model_name: 'model-iris',
          inputs: [features()],
          raw_input_contents: [raw],
        });
        expect(predictions(small.value)).toEqual(expected);
        const walt = await dev!.key(['models:inference'], 'platform', {}, 'walt');
        const other = await call('ModelInfer', big, { authorization: `Apikey ${walt}` });
        expect(other.error).toBeUndefined();
        expect((other.value?.raw_output_contents as Buffer[])[0]?.length).toBe(rows * 8);
      } finally {
        for (const stream of streams) stream.close();
        session.close();
      }
      // Her connection gone, her answers are dropped with it, and her large calls are answered.
      const again = await until(
        'her large call answered again',
        async () => {
          const r = await call('ModelInfer', big);
          return r.error === undefined ? r : undefined;
        },
        10_000,
      );
      expect((again.value?.raw_output_contents as Buffer[])[0]?.length).toBe(rows * 8);
    }, 120_000);

    test('a message past the body limit is refused; the calls are counted as REST calls are', async () => {
      const before = await modelRequests();
      const big = await call('ModelInfer', {
        model_name: 'model-iris',
        inputs: [features({ shape: [1_000_000, 4] })],
        raw_input_contents: [Buffer.alloc(16_000_000)],
      });
      expect(big.error?.code).toBe(8);
      for (let i = 0; i < 3; i++)
        await call('ModelInfer', {
          model_name: 'model-iris',
          inputs: [features()],
          raw_input_contents: [raw],
        });
      expect((await modelRequests()) - before).toBe(3);
    });

    const modelRequests = async (): Promise<number> => {
      const text = await (await fetch(`${dev?.base}/metrics`)).text();
      return text
        .split('\n')
        .filter(
          (l) =>
            l.startsWith('tollgate_model_requests_total{') &&
            l.includes('model="model-iris"') &&
            l.includes('status="200"'),
        )
        .reduce((a, l) => a + Number(l.split(' ').at(-1)), 0);
    };
  });
});

/** The processes of a model version's own MLServer under `tollgate dev`'s state: those whose working folder is its own. */
async function runtimePids(state: string, workload: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => '');
    if (cwd.startsWith(state) && path.basename(cwd) === workload) pids.push(Number(entry));
  }
  return pids;
}

/** A V2 REST call that declares `declared` bytes, sends `sent` of them and waits: its answer, whenever it comes. */
function stalledRest(
  base: string,
  key: string,
  declared: number,
  sent: number,
): { socket: Socket; sent: Promise<void>; answer: Promise<{ head: string; body: string }> } {
  const url = new URL(base);
  const socket = netConnect(Number(url.port), url.hostname);
  socket.on('error', () => undefined);
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const answer = new Promise<{ head: string; body: string }>((resolve) =>
    socket.once('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      resolve({ head: text.slice(0, end + 2), body: text.slice(end + 4) });
    }),
  );
  const head =
    `POST /v2/models/model-iris/infer HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Apikey ${key}\r\n` +
    `content-type: application/json\r\ncontent-length: ${declared}\r\n\r\n`;
  const body = Buffer.alloc(sent, 0x20);
  const written = new Promise<void>((resolve) => {
    socket.write(head);
    socket.write(body, () => resolve());
  });
  return { socket, sent: written, answer };
}
