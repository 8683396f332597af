import { describe, expect, it } from '@jest/globals';
import { status as Status } from '@grpc/grpc-js';
import { TollgateError } from '../../../common/errors.js';
import { DecodeCost } from '../../../gateway/grpc/decode-cost.js';
import {
  protocolTypes,
  type ModelInferRequest,
  type TensorContents,
} from '../../../gateway/grpc/protocol.js';
import { peerAddress } from '../../../gateway/grpc/peer.js';
import { restErrorOf, serviceError } from '../../../gateway/grpc/status.js';
import { inferRequestBody, inferResponse } from '../../../gateway/grpc/tensors.js';

const Request = protocolTypes().lookupType('inference.ModelInferRequest');
const inferRequestCost = (message: Uint8Array): number => new DecodeCost(Request).of(message);
const wire = (message: Record<string, unknown>): Uint8Array =>
  Request.encode(Request.fromObject(message)).finish();

/** A varint, padded to `width` bytes when asked (a longer encoding the decoder reads the same). */
function varint(n: number, width = 0): Buffer {
  const out: number[] = [];
  do {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  } while (n > 0 || out.length < width);
  out[out.length - 1] = (out[out.length - 1] as number) & 0x7f;
  return Buffer.from(out);
}

const none: TensorContents = {
  bool_contents: [],
  int_contents: [],
  int64_contents: [],
  uint_contents: [],
  uint64_contents: [],
  fp32_contents: [],
  fp64_contents: [],
  bytes_contents: [],
};

const request = (over: Partial<ModelInferRequest>): ModelInferRequest => ({
  model_name: 'model-iris',
  model_version: '',
  id: '',
  parameters: {},
  inputs: [],
  outputs: [],
  raw_input_contents: [],
  ...over,
});

const input = (datatype: string, shape: number[], contents: Partial<TensorContents> | null = null) => ({
  name: 'x',
  datatype,
  shape,
  parameters: {},
  contents: contents === null ? null : { ...none, ...contents },
});

/** The JSON header and the raw bytes after it. */
function split(body: Buffer, headerLength: number): { header: Record<string, unknown>; raw: Buffer } {
  return {
    header: JSON.parse(body.subarray(0, headerLength).toString('utf8')) as Record<string, unknown>,
    raw: body.subarray(headerLength),
  };
}

const refused = (f: () => unknown): [string, string | undefined] => {
  try {
    f();
  } catch (err) {
    if (err instanceof TollgateError) return [err.code, err.field];
    throw err;
  }
  throw new Error('not refused');
};

describe('a ModelInferRequest as the binary-extension request the core checks', () => {
  it('typed contents become the raw bytes of their datatype, little-endian; the answer is asked as JSON', () => {
    const cases: Array<[string, Partial<TensorContents>, Buffer]> = [
      ['FP32', { fp32_contents: [1.5, -2] }, Buffer.from(new Float32Array([1.5, -2]).buffer)],
      ['FP64', { fp64_contents: [0.1] }, Buffer.from(new Float64Array([0.1]).buffer)],
      ['INT8', { int_contents: [-1, 7] }, Buffer.from([0xff, 7])],
      ['INT64', { int64_contents: [-2] }, Buffer.from(new BigInt64Array([-2n]).buffer)],
      ['UINT16', { uint_contents: [513] }, Buffer.from([1, 2])],
      ['BOOL', { bool_contents: [true, false] }, Buffer.from([1, 0])],
      [
        'BYTES',
        { bytes_contents: [Buffer.from('ab'), Buffer.alloc(0)] },
        Buffer.from([2, 0, 0, 0, 97, 98, 0, 0, 0, 0]),
      ],
    ];
    for (const [datatype, contents, bytes] of cases) {
      const { body, headerLength } = inferRequestBody(
        request({ id: 'r1', inputs: [input(datatype, [bytes.length], contents)] }),
      );
      const { header, raw } = split(body, headerLength);
      expect(raw).toEqual(bytes);
      expect(header).toEqual({
        id: 'r1',
        parameters: {},
        inputs: [
          { name: 'x', datatype, shape: [bytes.length], parameters: { binary_data_size: bytes.length } },
        ],
      });
    }
  });

  it('raw_input_contents go as they are; parameters keep their values, framing parameters are dropped', () => {
    const raw = Buffer.from([1, 2, 3, 4]);
    const { body, headerLength } = inferRequestBody(
      request({
        parameters: {
          binary_data_output: { parameter_choice: 'bool_param', bool_param: false },
          priority: { parameter_choice: 'int64_param', int64_param: 3 },
        },
        inputs: [
          {
            ...input('UINT8', [4]),
            parameters: { content_type: { parameter_choice: 'string_param', string_param: 'np' } },
          },
        ],
        outputs: [
          { name: 'y', parameters: { binary_data: { parameter_choice: 'bool_param', bool_param: false } } },
        ],
        raw_input_contents: [raw],
      }),
    );
    const { header, raw: after } = split(body, headerLength);
    expect(after).toEqual(raw);
    expect(header).toEqual({
      parameters: { priority: 3 },
      inputs: [
        { name: 'x', datatype: 'UINT8', shape: [4], parameters: { content_type: 'np', binary_data_size: 4 } },
      ],
      outputs: [{ name: 'y', parameters: {} }],
    });
  });

  it('refuses tensors sent two ways, in the wrong field, out of range, or of no V2 datatype, naming the field', () => {
    const raw = [Buffer.alloc(4)];
    expect(
      refused(() =>
        inferRequestBody(request({ inputs: [input('FP32', [1])], raw_input_contents: [...raw, ...raw] })),
      ),
    ).toEqual(['invalid_binary_data', 'raw_input_contents']);
    expect(
      refused(() =>
        inferRequestBody(
          request({ inputs: [input('FP32', [1], { fp32_contents: [1] })], raw_input_contents: raw }),
        ),
      ),
    ).toEqual(['invalid_binary_data', 'inputs[x].contents']);
    expect(
      refused(() => inferRequestBody(request({ inputs: [input('FP32', [1], { int_contents: [1] })] }))),
    ).toEqual(['invalid_binary_data', 'inputs[x].contents.int_contents']);
    expect(
      refused(() => inferRequestBody(request({ inputs: [input('INT8', [1], { int_contents: [300] })] }))),
    ).toEqual(['invalid_binary_data', 'inputs[x].contents']);
    expect(
      refused(() => inferRequestBody(request({ inputs: [input('FP16', [1], { fp32_contents: [1] })] }))),
    ).toEqual(['invalid_binary_data', 'inputs[x].contents']);
    expect(
      refused(() => inferRequestBody(request({ inputs: [input('FLOAT', [1], { fp32_contents: [1] })] }))),
    ).toEqual(['invalid_datatype', 'inputs[x].datatype']);
  });
});

describe("the runtime's JSON answer as a ModelInferResponse", () => {
  const answer = (outputs: unknown[]): Buffer =>
    Buffer.from(
      JSON.stringify({
        model_name: 'model-iris',
        model_version: '2',
        id: 'r1',
        parameters: { took: 1.5 },
        outputs,
      }),
    );

  it('makes each output raw in order, little-endian, its framing parameters gone', () => {
    const got = inferResponse(
      answer([
        {
          name: 'predict',
          datatype: 'INT64',
          shape: [1, 1],
          parameters: { content_type: 'np', binary_data_size: 8 },
          data: [1],
        },
        { name: 'proba', datatype: 'FP64', shape: [1, 2], data: [[0.25, 0.75]] },
        { name: 'label', datatype: 'BYTES', shape: [1], parameters: { content_type: 'str' }, data: ['ab'] },
      ]),
    );
    expect(got).toEqual({
      model_name: 'model-iris',
      model_version: '2',
      id: 'r1',
      parameters: { took: { parameter_choice: 'double_param', double_param: 1.5 } },
      outputs: [
        {
          name: 'predict',
          datatype: 'INT64',
          shape: [1, 1],
          parameters: { content_type: { parameter_choice: 'string_param', string_param: 'np' } },
        },
        { name: 'proba', datatype: 'FP64', shape: [1, 2], parameters: {} },
        {
          name: 'label',
          datatype: 'BYTES',
          shape: [1],
          parameters: { content_type: { parameter_choice: 'string_param', string_param: 'str' } },
        },
      ],
      raw_output_contents: [
        Buffer.from([1, 0, 0, 0, 0, 0, 0, 0]),
        Buffer.from(new Float64Array([0.25, 0.75]).buffer),
        Buffer.from([2, 0, 0, 0, 97, 98]),
      ],
    });
  });

  it('refuses an output that cannot be made raw, has no values, or an answer cut short, rather than send it changed', () => {
    expect(
      refused(() => inferResponse(answer([{ name: 'p', datatype: 'INT8', shape: [1], data: [300] }]))),
    ).toEqual(['model_failed', undefined]);
    expect(refused(() => inferResponse(answer([{ name: 'p', datatype: 'FP64', shape: [2] }])))).toEqual([
      'model_failed',
      undefined,
    ]);
    expect(
      refused(() => inferResponse(answer([{ name: 'p', datatype: 'FLOAT', shape: [1], data: [1] }]))),
    ).toEqual(['model_failed', undefined]);
    expect(refused(() => inferResponse(Buffer.from('{"outputs": [')))).toEqual(['model_failed', undefined]);
  });
});

describe('what a ModelInferRequest costs to decode, read before decoding', () => {
  it('is about its size for raw tensors, and grows with entries and typed values', () => {
    const raw = wire({
      model_name: 'model-iris',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4] }],
      raw_input_contents: [Buffer.alloc(1_000_000)],
    });
    expect(inferRequestCost(raw)).toBeLessThan(1_100_000);
    // 100,000 empty inputs: 200 kB on the wire, tens of megabytes decoded.
    const empties = wire({ inputs: Array.from({ length: 100_000 }, () => ({})) });
    expect(empties.length).toBeLessThan(250_000);
    expect(inferRequestCost(empties)).toBeGreaterThanOrEqual(100_000 * 200);
    // Packed zeros: one byte each on the wire, a number each decoded.
    const zeros = wire({
      inputs: [{ name: 'x', datatype: 'INT64', contents: { int64_contents: Array(100_000).fill(0) } }],
    });
    // Each a Long object once decoded.
    expect(inferRequestCost(zeros)).toBeGreaterThanOrEqual(100_000 * 100);
    const floats = wire({ inputs: [{ contents: { fp32_contents: Array(1_000).fill(1.5) } }] });
    expect(inferRequestCost(floats)).toBeGreaterThanOrEqual(1_000 * 32);
    expect(inferRequestCost(floats)).toBeLessThan(1_000 * 32 + 2_000);
  });

  it('refuses bytes that are not protobuf, and a field framed otherwise than its type says', () => {
    expect(refused(() => inferRequestCost(Buffer.from([0x2a, 0xff, 0xff, 0xff, 0x0f])))).toEqual([
      'bad_request',
      undefined,
    ]);
    // Field 5 (inputs, a message) sent as a varint: the decoder would read what follows as a length.
    expect(refused(() => inferRequestCost(Buffer.from([0x28, 0x05])))).toEqual(['bad_request', undefined]);
    // A packed FP64 run that is not whole values.
    const contents = Buffer.from([0x3a, 0x03, 1, 2, 3]); // fp64_contents, 3 bytes
    const tensor = Buffer.concat([Buffer.from([0x2a, contents.length]), contents]); // contents (5)
    const message = Buffer.concat([Buffer.from([0x2a, tensor.length]), tensor]); // inputs (5)
    expect(refused(() => inferRequestCost(message))).toEqual(['bad_request', undefined]);
    // Fields the decoder drops cost nothing.
    expect(inferRequestCost(Buffer.from([0xf8, 0x06, 0x01]))).toBeLessThan(500);
    // A 32-bit varint written long: the decoder reads ten bytes for it, whatever the fifth says,
    // and the count reads it the same way, so what follows is counted as what the decoder makes
    // of it (here 100,000 packed INT64 zeros), not skipped as an unknown field.
    const region = Buffer.concat([Buffer.from([0x1a]), varint(100_000), Buffer.alloc(100_000)]);
    const contents2 = Buffer.concat([
      Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x4a]),
      varint(region.length, 3),
      region,
    ]);
    const tensor2 = Buffer.concat([Buffer.from([0x2a]), varint(contents2.length), contents2]);
    const smuggled = Buffer.concat([Buffer.from([0x2a]), varint(tensor2.length), tensor2]);
    expect(inferRequestCost(smuggled)).toBeGreaterThanOrEqual(100_000 * 100);
  });
});

describe('errors as gRPC statuses', () => {
  const statusOf = (code: ConstructorParameters<typeof TollgateError>[0]) =>
    serviceError(restErrorOf(new TollgateError(code, 'm'))).code;

  it('follow the HTTP status, with the code first in the message and in the trailers', () => {
    expect(statusOf('shape_mismatch')).toBe(Status.INVALID_ARGUMENT);
    expect(statusOf('missing_api_key')).toBe(Status.UNAUTHENTICATED);
    expect(statusOf('model_access_denied')).toBe(Status.PERMISSION_DENIED);
    expect(statusOf('model_not_found')).toBe(Status.NOT_FOUND);
    expect(statusOf('request_timeout')).toBe(Status.DEADLINE_EXCEEDED);
    expect(statusOf('upstream_timeout')).toBe(Status.DEADLINE_EXCEEDED);
    expect(statusOf('body_too_large')).toBe(Status.RESOURCE_EXHAUSTED);
    expect(statusOf('rate_limited')).toBe(Status.RESOURCE_EXHAUSTED);
    expect(statusOf('model_not_ready')).toBe(Status.UNAVAILABLE);
    expect(statusOf('upstream_connection_failed')).toBe(Status.UNAVAILABLE);
    // A model that failed on this request would fail again: not for retrying.
    expect(statusOf('model_failed')).toBe(Status.INTERNAL);
    expect(statusOf('internal_error')).toBe(Status.INTERNAL);
    const e = serviceError(
      restErrorOf(
        new TollgateError('rate_limited', 'slow down', { field: 'x', headers: { 'retry-after': '2' } }),
      ),
      'req-1',
    );
    expect(e.details).toBe('rate_limited: slow down');
    expect(e.metadata.getMap()).toEqual({
      'tollgate-code': 'rate_limited',
      'tollgate-field': 'x',
      'retry-after': '2',
      'x-request-id': 'req-1',
    });
  });

  it('sends what grpc-js can encode whatever the caller named: non-ASCII fields, emoji at the limit', () => {
    const e = serviceError(
      restErrorOf(new TollgateError('invalid_binary_data', 'x', { field: 'inputs[é].contents' })),
    );
    expect(e.metadata.get('tollgate-field')).toEqual(['inputs%5B%C3%A9%5D.contents']);
    // Clipped by its size as grpc-js percent-encodes it, never inside a character.
    const emoji = serviceError(restErrorOf(new TollgateError('model_not_found', '😀'.repeat(2_000))));
    expect(emoji.details.endsWith('😀...')).toBe(true);
    expect(encodeURIComponent(emoji.details).length).toBeLessThanOrEqual(3_009);
    const lone = serviceError(restErrorOf(new TollgateError('model_not_found', `x\uD83D`)));
    expect(lone.details).toBe('model_not_found: x\uFFFD');
  });

  it('keeps a long message within the trailers, and hides what the gateway did not expect', () => {
    const long = serviceError(restErrorOf(new TollgateError('model_not_found', 'x'.repeat(5_000))));
    expect(long.details.length).toBeLessThanOrEqual(3_003);
    const unknown = serviceError(restErrorOf(new Error('secret internals')));
    expect(unknown.details).toBe('internal_error: the gateway failed unexpectedly; see its logs');
  });
});

describe("the caller's address", () => {
  it('is read from grpc-js peers, IPv4 and IPv6, and is nothing (the call refused) when unreadable', () => {
    expect(peerAddress('10.0.0.7:51234')).toBe('10.0.0.7');
    expect(peerAddress('::ffff:10.0.0.7:51234')).toBe('::ffff:10.0.0.7');
    expect(peerAddress('::1:5000')).toBe('::1');
    expect(peerAddress('10.0.0.7')).toBe('10.0.0.7');
    expect(peerAddress('ipv4:10.0.0.7:51234')).toBeUndefined();
    expect(peerAddress('unknown')).toBeUndefined();
  });
});
