import { TollgateError } from '../../../common/errors.js';
import { decodeBinaryRequest, encodeBinaryResponse } from '../../../gateway/v2/binary-tensors.js';
import type { ModelMetadata } from '../../../gateway/v2/metadata.js';
import { binaryOutputsWanted } from '../../../gateway/v2/validate-infer.js';

/** The translation's bound in these tests: generous, but for the test that reaches it. */
const LIMIT = 1 << 20;

const metadata: ModelMetadata = {
  name: 'model-x',
  platform: '',
  versions: [],
  inputs: [{ name: 'photo', datatype: 'BYTES', shape: [-1], parameters: { content_type: 'base64' } }],
  outputs: [],
  parameters: {},
};

/** A request in the binary extension's layout: the JSON header, then each input's bytes. */
function binaryBody(inputs: Array<{ json: Record<string, unknown>; bytes?: Buffer }>, extra = {}) {
  const header = Buffer.from(
    JSON.stringify({
      ...extra,
      inputs: inputs.map(({ json, bytes }) =>
        bytes === undefined
          ? json
          : { ...json, parameters: { ...(json.parameters as object), binary_data_size: bytes.length } },
      ),
    }),
  );
  const body = Buffer.concat([header, ...inputs.flatMap((i) => (i.bytes === undefined ? [] : [i.bytes]))]);
  return { body, headerLength: String(header.length) };
}

const floats = (values: number[]) => Buffer.from(new Float32Array(values).buffer);
const bytesElements = (...parts: Buffer[]) =>
  Buffer.concat(
    parts.flatMap((p) => {
      const size = Buffer.alloc(4);
      size.writeUInt32LE(p.length);
      return [size, p];
    }),
  );

function refusal(fn: () => unknown): TollgateError {
  try {
    fn();
  } catch (e) {
    if (e instanceof TollgateError) return e;
    throw e;
  }
  throw new Error('accepted');
}

describe('decodeBinaryRequest', () => {
  it('turns raw tensors into JSON data, keeping JSON inputs and the rest of the request', () => {
    const int64 = Buffer.alloc(16);
    int64.writeBigInt64LE(-3n, 0);
    int64.writeBigInt64LE(9007199254740991n, 8);
    const half = Buffer.alloc(4);
    half.writeUInt16LE(0x3c00, 0); // 1.0
    half.writeUInt16LE(0xc000, 2); // -2.0
    const { body, headerLength } = binaryBody(
      [
        { json: { name: 'f', datatype: 'FP32', shape: [1, 3] }, bytes: floats([0.5, -1.25, 3]) },
        { json: { name: 'i', datatype: 'INT64', shape: [2] }, bytes: int64 },
        { json: { name: 'b', datatype: 'BOOL', shape: [2] }, bytes: Buffer.from([1, 0]) },
        { json: { name: 'h', datatype: 'FP16', shape: [2] }, bytes: half },
        { json: { name: 'j', datatype: 'INT32', shape: [1], data: [7] } },
        {
          json: { name: 's', datatype: 'BYTES', shape: [2] },
          bytes: bytesElements(Buffer.from('Paris'), Buffer.from('Lyon')),
        },
      ],
      { id: 'r1', outputs: [{ name: 'out', parameters: { binary_data: true } }] },
    );
    const request = JSON.parse(
      decodeBinaryRequest(body, headerLength, { ...metadata, inputs: [] }, LIMIT).json,
    ) as {
      id: string;
      outputs: unknown[];
      inputs: Array<{ name: string; data: unknown[]; parameters?: Record<string, unknown> }>;
    };
    expect(request.id).toBe('r1');
    expect(request.outputs).toEqual([{ name: 'out', parameters: { binary_data: true } }]);
    const byName = Object.fromEntries(request.inputs.map((i) => [i.name, i]));
    expect(byName['f']).toEqual({
      name: 'f',
      datatype: 'FP32',
      shape: [1, 3],
      parameters: {},
      data: [0.5, -1.25, 3],
    });
    expect(byName['i']?.data).toEqual([-3, 9007199254740991]);
    expect(byName['b']?.data).toEqual([true, false]);
    expect(byName['h']?.data).toEqual([1, -2]);
    expect(byName['j']?.data).toEqual([7]);
    // Text with no content_type given is sent as text, and says so.
    expect(byName['s']).toMatchObject({ data: ['Paris', 'Lyon'], parameters: { content_type: 'str' } });
  });

  it('sends BYTES as base64 when the model declares it, or when they are not text', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe]);
    const declared = binaryBody([
      { json: { name: 'photo', datatype: 'BYTES', shape: [1] }, bytes: bytesElements(png) },
    ]);
    const input = (
      JSON.parse(decodeBinaryRequest(declared.body, declared.headerLength, metadata, LIMIT).json) as {
        inputs: Array<{ data: string[]; parameters: { content_type: string } }>;
      }
    ).inputs[0];
    expect(input).toMatchObject({ data: [png.toString('base64')], parameters: { content_type: 'base64' } });

    const undeclared = binaryBody([
      { json: { name: 'blob', datatype: 'BYTES', shape: [1] }, bytes: bytesElements(png) },
    ]);
    const guessed = JSON.parse(
      decodeBinaryRequest(undeclared.body, undeclared.headerLength, { ...metadata, inputs: [] }, LIMIT).json,
    ) as {
      inputs: Array<{ parameters: { content_type: string } }>;
    };
    expect(guessed.inputs[0]?.parameters.content_type).toBe('base64');

    // Said to be text, but is not: refused with the fix.
    const wrong = binaryBody([
      {
        json: { name: 'blob', datatype: 'BYTES', shape: [1], parameters: { content_type: 'str' } },
        bytes: bytesElements(png),
      },
    ]);
    const e = refusal(
      () => decodeBinaryRequest(wrong.body, wrong.headerLength, { ...metadata, inputs: [] }, LIMIT).json,
    );
    expect([e.code, e.field]).toEqual(['invalid_binary_data', 'inputs[blob].parameters.content_type']);
    expect(e.message).toContain('send content_type "base64"');
  });

  it.each([
    [
      'a header length past the body',
      (b: Buffer): [Buffer, string] => [b, String(b.length + 1)],
      'inference-header-content-length',
    ],
    [
      'a header length that is not a number',
      (b: Buffer): [Buffer, string] => [b, '12abc'],
      'inference-header-content-length',
    ],
    [
      'bytes left over after the inputs',
      (b: Buffer, h: string): [Buffer, string] => [Buffer.concat([b, Buffer.from([0])]), h],
      'body',
    ],
    [
      'bytes missing',
      (b: Buffer, h: string): [Buffer, string] => [b.subarray(0, b.length - 2), h],
      'inputs[f].parameters.binary_data_size',
    ],
  ] as const)('refuses %s', (_label, mangle, field) => {
    const { body, headerLength } = binaryBody([
      { json: { name: 'f', datatype: 'FP32', shape: [2] }, bytes: floats([1, 2]) },
    ]);
    const [b, h] = mangle(body, headerLength);
    const e = refusal(() => decodeBinaryRequest(b, h, { ...metadata, inputs: [] }, LIMIT).json);
    expect([e.status, e.code, e.field]).toEqual([400, 'invalid_binary_data', field]);
  });

  it('refuses a size that is not what the shape needs, values JSON cannot carry, and data sent twice', () => {
    const free = { ...metadata, inputs: [] };
    const decode = (r: { body: Buffer; headerLength: string }, meta: ModelMetadata = free) =>
      refusal(() => decodeBinaryRequest(r.body, r.headerLength, meta, LIMIT));
    const odd = decode(
      binaryBody([{ json: { name: 'f', datatype: 'FP32', shape: [2] }, bytes: Buffer.alloc(6) }]),
    );
    expect([odd.code, odd.message]).toEqual([
      'shape_data_mismatch',
      "input 'f': shape [2] needs 2 FP32 values, 8 bytes; binary_data_size is 6",
    ]);
    // Whole values, but not as many as the shape says.
    const more = decode(
      binaryBody([{ json: { name: 'f', datatype: 'FP32', shape: [1] }, bytes: floats([1, 2]) }]),
    );
    expect(more.code).toBe('shape_data_mismatch');
    const elements = decode(
      binaryBody([
        {
          json: { name: 's', datatype: 'BYTES', shape: [1] },
          bytes: bytesElements(Buffer.from('a'), Buffer.from('b')),
        },
      ]),
    );
    expect([elements.code, elements.message]).toEqual([
      'shape_data_mismatch',
      "input 's': shape [1] needs 1 BYTES elements; its binary data holds more",
    ]);
    expect(
      decode(binaryBody([{ json: { name: 'f', datatype: 'FP32', shape: [1] }, bytes: floats([NaN]) }]))
        .message,
    ).toContain('is NaN');
    const huge = Buffer.alloc(8);
    huge.writeBigInt64LE(2n ** 60n);
    expect(
      decode(binaryBody([{ json: { name: 'i', datatype: 'INT64', shape: [1] }, bytes: huge }])).code,
    ).toBe('invalid_binary_data');
    const both = binaryBody([
      { json: { name: 'f', datatype: 'FP32', shape: [1], data: [1] }, bytes: floats([1]) },
    ]);
    expect(decode(both).message).toContain('not both');
    const header = Buffer.from('{"inputs": [');
    expect(refusal(() => decodeBinaryRequest(header, String(header.length), metadata, LIMIT)).code).toBe(
      'invalid_json',
    );
  });

  it('checks the header against the model before decoding a byte: a datatype or shape the model does not take', () => {
    const iris: ModelMetadata = {
      ...metadata,
      inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 4], parameters: {} }],
    };
    // A megabyte of BOOL for an FP32 input: refused on its header, whatever the bytes.
    const bools = binaryBody([
      { json: { name: 'features', datatype: 'BOOL', shape: [1 << 20] }, bytes: Buffer.alloc(1 << 20, 1) },
    ]);
    const wrongType = refusal(() => decodeBinaryRequest(bools.body, bools.headerLength, iris, LIMIT));
    expect([wrongType.code, wrongType.field]).toEqual(['datatype_mismatch', 'inputs[features].datatype']);
    const flat = binaryBody([
      { json: { name: 'features', datatype: 'FP32', shape: [8] }, bytes: floats([1, 2, 3, 4, 5, 6, 7, 8]) },
    ]);
    expect(refusal(() => decodeBinaryRequest(flat.body, flat.headerLength, iris, LIMIT)).code).toBe(
      'shape_mismatch',
    );
    // And what it takes, once, with the request checks' answer alongside.
    const ok = binaryBody(
      [
        {
          json: { name: 'features', datatype: 'FP32', shape: [2, 4] },
          bytes: floats([1, 2, 3, 4, 5, 6, 7, 8]),
        },
      ],
      { id: 'r9' },
    );
    const translated = decodeBinaryRequest(ok.body, ok.headerLength, iris, LIMIT);
    expect(translated.checked).toEqual({ id: 'r9', rows: 2 });
    expect((JSON.parse(translated.json) as { inputs: Array<{ data: number[] }> }).inputs[0]?.data).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8,
    ]);
  });

  it('stops with 413 once the JSON would pass its bound, and a client’s text cannot pose as a placeholder', () => {
    const free = { ...metadata, inputs: [] };
    // 64 KiB of BOOL: 64 Ki values of up to 6 characters each, past a 256 KiB bound.
    const bools = binaryBody([
      { json: { name: 'b', datatype: 'BOOL', shape: [1 << 16] }, bytes: Buffer.alloc(1 << 16, 0) },
    ]);
    const e = refusal(() => decodeBinaryRequest(bools.body, bools.headerLength, free, 256 * 1024));
    expect([e.status, e.code]).toEqual([413, 'body_too_large']);
    expect(e.message).toContain('send fewer rows per call');
    expect(decodeBinaryRequest(bools.body, bools.headerLength, free, 1 << 20).json.length).toBeLessThan(
      1 << 20,
    );
    const sneaky = binaryBody(
      [
        {
          json: { name: 'a', datatype: 'BYTES', shape: [1] },
          bytes: bytesElements(Buffer.from('tollgate-binary-0-1')),
        },
        { json: { name: 'b', datatype: 'INT32', shape: [1], data: [5] } },
      ],
      { id: 'tollgate-binary-0-0' },
    );
    const request = JSON.parse(decodeBinaryRequest(sneaky.body, sneaky.headerLength, free, LIMIT).json) as {
      id: string;
      inputs: Array<{ data: unknown[] }>;
    };
    expect(request.id).toBe('tollgate-binary-0-0');
    expect(request.inputs.map((i) => i.data)).toEqual([['tollgate-binary-0-1'], [5]]);
  });
});

describe('binaryOutputsWanted and encodeBinaryResponse', () => {
  const answer = Buffer.from(
    JSON.stringify({
      model_name: 'model-iris',
      id: 'r1',
      outputs: [
        { name: 'predict', datatype: 'INT64', shape: [2, 1], data: [[0], [2]] },
        { name: 'predict_proba', datatype: 'FP64', shape: [1, 3], data: [0.25, 0.5, 0.25] },
        { name: 'label', datatype: 'BYTES', shape: [1], data: ['setosa'] },
      ],
    }),
  );

  it('reads what the request asks for in binary', () => {
    expect(binaryOutputsWanted({ parameters: { binary_data_output: true } })).toBe('all');
    expect(
      binaryOutputsWanted({
        outputs: [
          { name: 'a', parameters: { binary_data: true } },
          { name: 'b', parameters: { binary_data: false } },
          { name: 'c' },
        ],
      }),
    ).toEqual(new Set(['a']));
    expect(binaryOutputsWanted({ outputs: [{ name: 'a' }] })).toBeUndefined();
  });

  it('moves the wanted outputs into raw bytes after the JSON header', () => {
    const encoded = encodeBinaryResponse(answer, 'all');
    if (encoded === undefined) throw new Error('nothing encoded');
    const header = JSON.parse(encoded.body.subarray(0, encoded.headerLength).toString()) as {
      id: string;
      outputs: Array<{ name: string; data?: unknown; parameters: { binary_data_size: number } }>;
    };
    expect(header.id).toBe('r1');
    expect(header.outputs.map((o) => [o.name, o.data, o.parameters.binary_data_size])).toEqual([
      ['predict', undefined, 16],
      ['predict_proba', undefined, 24],
      ['label', undefined, 10],
    ]);
    const raw = encoded.body.subarray(encoded.headerLength);
    expect([raw.readBigInt64LE(0), raw.readBigInt64LE(8)]).toEqual([0n, 2n]);
    expect([raw.readDoubleLE(16), raw.readDoubleLE(24), raw.readDoubleLE(32)]).toEqual([0.25, 0.5, 0.25]);
    expect([raw.readUInt32LE(40), raw.subarray(44).toString()]).toEqual([6, 'setosa']);
  });

  it('leaves outputs not asked for in JSON, and answers that are not V2 as they are', () => {
    const encoded = encodeBinaryResponse(answer, new Set(['predict_proba']));
    const header = JSON.parse(encoded?.body.subarray(0, encoded.headerLength).toString() ?? '{}') as {
      outputs: Array<{ name: string; data?: unknown }>;
    };
    expect(header.outputs.map((o) => o.data)).toEqual([[[0], [2]], undefined, ['setosa']]);
    expect(encoded?.body.length).toBe((encoded?.headerLength ?? 0) + 24);
    expect(encodeBinaryResponse(Buffer.from('not json'), 'all')).toBeUndefined();
    expect(encodeBinaryResponse(answer, new Set(['absent']))).toBeUndefined();
  });
});

describe('a binary request’s header nested thousands deep', () => {
  it('is a 400 naming the body, not a 500', () => {
    const photo = Buffer.from('abc');
    const { body, headerLength } = binaryBody([
      {
        json: { name: 'photo', datatype: 'BYTES', shape: [1], parameters: { content_type: 'base64' } },
        bytes: Buffer.concat([Buffer.from([3, 0, 0, 0]), photo]),
      },
    ]);
    // The deep value goes in the request's own parameters, which are passed on as they are.
    const depth = 20_000;
    const header = body.subarray(0, Number(headerLength)).toString();
    const deepHeader = `{"parameters":{"x":${'['.repeat(depth)}${']'.repeat(depth)}},${header.slice(1)}`;
    const deepBody = Buffer.concat([Buffer.from(deepHeader), body.subarray(Number(headerLength))]);
    let caught: unknown;
    try {
      decodeBinaryRequest(deepBody, String(Buffer.byteLength(deepHeader)), metadata, LIMIT);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(TollgateError);
    const e = caught as TollgateError;
    expect([e.status, e.code, e.field]).toEqual([400, 'invalid_json', 'body']);
    expect(e.message).toMatch(/nested too deeply/);
  });
});
