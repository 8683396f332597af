import { TollgateError } from '../../../common/errors.js';
import { modelMetadataSchema, type ModelMetadata } from '../../../gateway/v2/metadata.js';
import { validateInferRequest } from '../../../gateway/v2/validate-infer.js';

// Metadata as MLServer reports it for the spec's cases (nulls where the settings file is silent).
const iris: ModelMetadata = modelMetadataSchema.parse({
  name: 'model-iris',
  versions: [],
  platform: '',
  inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 4], parameters: null }],
  outputs: [
    { name: 'predict', datatype: 'INT64', shape: [-1, 1], parameters: null },
    { name: 'predict_proba', datatype: 'FP64', shape: [-1, 3], parameters: null },
  ],
  parameters: { content_type: 'np' },
});

const columns: ModelMetadata = modelMetadataSchema.parse({
  name: 'model-columns',
  inputs: [
    { name: 'city', datatype: 'BYTES', shape: [-1], parameters: { content_type: 'str' } },
    { name: 'rooms', datatype: 'BYTES', shape: [-1] },
  ],
  outputs: null,
  parameters: { content_type: 'pd' },
});

const image: ModelMetadata = modelMetadataSchema.parse({
  name: 'model-image',
  inputs: [{ name: 'image', datatype: 'BYTES', shape: [-1], parameters: { content_type: 'base64' } }],
});

const undeclared: ModelMetadata = modelMetadataSchema.parse({ name: 'model-free', inputs: null });

const features = (shape: unknown, data: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ inputs: [{ name: 'features', datatype: 'FP32', shape, data, ...extra }] });

function rejection(body: string, metadata: ModelMetadata = iris): TollgateError {
  try {
    validateInferRequest(body, metadata);
  } catch (e) {
    if (e instanceof TollgateError) return e;
    throw e;
  }
  throw new Error(`expected ${body} to be rejected`);
}

function expectRejected(body: string, code: string, message: string | RegExp, metadata = iris): void {
  const e = rejection(body, metadata);
  expect(e.status).toBe(400);
  expect(e.code).toBe(code);
  if (typeof message === 'string') expect(e.message).toBe(message);
  else expect(e.message).toMatch(message);
}

describe('valid requests pass', () => {
  test('flat numeric batch, id returned', () => {
    const body = JSON.stringify({
      id: 'req-1',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [2, 4], data: [5.1, 3.5, 1.4, 0.2, 6, 3, 4, 1] }],
    });
    expect(validateInferRequest(body, iris)).toEqual({ id: 'req-1', rows: 2 });
  });

  test('nested rows and a Buffer body', () => {
    const body = Buffer.from(
      features(
        [2, 4],
        [
          [5.1, 3.5, 1.4, 0.2],
          [6, 3, 4, 1],
        ],
      ),
    );
    expect(validateInferRequest(body, iris)).toEqual({ id: undefined, rows: 2 });
  });

  test('partly nested rectangular data (numpy reshapes it)', () => {
    const meta = modelMetadataSchema.parse({
      name: 'm',
      inputs: [{ name: 'x', datatype: 'INT32', shape: [-1, 2, 2] }],
    });
    const body = JSON.stringify({
      inputs: [
        {
          name: 'x',
          datatype: 'INT32',
          shape: [2, 2, 2],
          data: [
            [1, 2, 3, 4],
            [5, 6, 7, 8],
          ],
        },
      ],
    });
    expect(() => validateInferRequest(body, meta)).not.toThrow();
  });

  test('one BYTES column per feature with str', () => {
    const body = JSON.stringify({
      inputs: [
        {
          name: 'city',
          datatype: 'BYTES',
          shape: [2],
          data: ['Paris', 'Lyon'],
          parameters: { content_type: 'str' },
        },
        {
          name: 'rooms',
          datatype: 'BYTES',
          shape: [2],
          data: ['3', '4'],
          parameters: { content_type: 'str' },
        },
      ],
      outputs: [{ name: 'predict' }],
    });
    expect(() => validateInferRequest(body, columns)).not.toThrow();
  });

  test('a base64 image', () => {
    const encoded = Buffer.alloc(100, 7).toString('base64');
    const body = JSON.stringify({
      inputs: [
        {
          name: 'image',
          datatype: 'BYTES',
          shape: [1],
          data: [encoded],
          parameters: { content_type: 'base64' },
        },
      ],
    });
    expect(() => validateInferRequest(body, image)).not.toThrow();
  });

  test('a base64 image of several megabytes', () => {
    const encoded = Buffer.alloc(9 * 1024 * 1024, 7).toString('base64');
    const body = JSON.stringify({
      inputs: [
        {
          name: 'image',
          datatype: 'BYTES',
          shape: [1],
          data: [encoded],
          parameters: { content_type: 'base64' },
        },
      ],
    });
    expect(() => validateInferRequest(body, image)).not.toThrow();
    expect(rejection(body.replace('"]', '!"]'), image).code).toBe('invalid_base64');
  });

  test('undeclared inputs: only the model-independent rules apply', () => {
    const body = JSON.stringify({
      inputs: [{ name: 'anything', datatype: 'FP64', shape: [1, 3], data: [1, 2, 3] }],
    });
    expect(() => validateInferRequest(body, undeclared)).not.toThrow();
    expectRejected(
      JSON.stringify({ inputs: [{ name: 'anything', datatype: 'FP64', shape: [1, 3], data: [1, 2] }] }),
      'shape_data_mismatch',
      "input 'anything': shape [1,3] needs 3 values, data has 2",
      undeclared,
    );
  });
});

describe('each rule of the checklist has its own 400', () => {
  test('body not JSON', () => {
    expectRejected(
      '{"inputs": [',
      'invalid_json',
      /^the request body is not valid JSON \(.+\); send a V2 inference request/,
    );
  });

  test('body not an object', () => {
    expectRejected(
      '[1,2]',
      'invalid_request',
      'the request body must be a JSON object with an "inputs" array',
    );
  });

  test.each([['{}'], ['{"inputs": {}}'], ['{"inputs": []}']])('inputs missing or empty: %s', (body) => {
    expectRejected(
      body,
      'missing_inputs',
      `the request needs a non-empty "inputs" array; model 'model-iris' takes 'features' (FP32 [-1,4])`,
    );
  });

  test('id not a string', () => {
    expectRejected(
      JSON.stringify({
        id: 7,
        inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }],
      }),
      'invalid_request',
      'the request "id" must be a string',
    );
  });

  test('input without a name', () => {
    expectRejected(
      JSON.stringify({ inputs: [{ datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] }),
      'invalid_input',
      'inputs[0] must be an object with a "name" string, "shape", "datatype" and "data"',
    );
  });

  test('unknown input name', () => {
    expectRejected(
      JSON.stringify({ inputs: [{ name: 'petals', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] }),
      'unknown_input',
      "input 'petals' is not an input of model 'model-iris'; its inputs are 'features' (FP32 [-1,4])",
    );
  });

  test('input sent twice', () => {
    const one = { name: 'features', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] };
    expectRejected(
      JSON.stringify({ inputs: [one, one] }),
      'duplicate_input',
      "input 'features' is sent twice; send each input once",
    );
  });

  test('declared input not sent', () => {
    const body = JSON.stringify({
      inputs: [
        { name: 'city', datatype: 'BYTES', shape: [1], data: ['Paris'], parameters: { content_type: 'str' } },
      ],
    });
    expectRejected(
      body,
      'missing_input',
      "model 'model-columns' needs input 'rooms' (BYTES [-1]); the request does not send it",
      columns,
    );
  });

  test('datatype that V2 does not have', () => {
    expectRejected(
      JSON.stringify({
        inputs: [{ name: 'features', datatype: 'FLOAT', shape: [1, 4], data: [1, 2, 3, 4] }],
      }),
      'invalid_datatype',
      /^input 'features': datatype "FLOAT" is not a V2 datatype; use one of BOOL, UINT8, .*, BYTES$/,
    );
  });

  test('datatype different from the declared one', () => {
    expectRejected(
      JSON.stringify({ inputs: [{ name: 'features', datatype: 'FP64', shape: [1, 4], data: [1, 2, 3, 4] }] }),
      'datatype_mismatch',
      "input 'features': datatype FP64 does not match the declared FP32",
    );
  });

  test.each([[[2, -1]], [[2, 1.5]], [[]], ['2x4'], [undefined]])(
    'shape not a list of non-negative integers: %j',
    (shape) => {
      expectRejected(
        features(shape, [1, 2, 3, 4]),
        'invalid_shape',
        `input 'features': shape must be a non-empty list of non-negative integers, batch first (e.g. [2, 4]); got ${JSON.stringify(shape)}`,
      );
    },
  );

  test('a model that declares no inputs still bounds how deep data may nest', () => {
    // An MLflow model saved without a signature: nothing declared to compare the shape with.
    const open = modelMetadataSchema.parse({ name: 'm', inputs: [] });
    const depth = 20_000;
    const data = `${'['.repeat(depth)}1${']'.repeat(depth)}`;
    const body = `{"inputs":[{"name":"x","datatype":"FP32","shape":[${Array(depth).fill(1).join(',')}],"data":${data}}]}`;
    expectRejected(
      body,
      'invalid_shape',
      "input 'x': shape has 20000 dimensions; at most 32 are accepted",
      open,
    );
    const deepest = { name: 'x', datatype: 'FP32', shape: Array(32).fill(1), data: [1] };
    expect(() => validateInferRequest(JSON.stringify({ inputs: [deepest] }), open)).not.toThrow();
  });

  test('shape product differs from the number of values (the spec example)', () => {
    expectRejected(
      features([2, 4], [1, 2, 3, 4, 5, 6]),
      'shape_data_mismatch',
      "input 'features': shape [2,4] needs 8 values, data has 6",
    );
  });

  test('nested data is counted by its values', () => {
    expectRejected(
      features(
        [3, 4],
        [
          [1, 2, 3, 4],
          [5, 6, 7, 8],
        ],
      ),
      'shape_data_mismatch',
      "input 'features': shape [3,4] needs 12 values, data has 8",
    );
  });

  test('ragged nested data', () => {
    expectRejected(
      features(
        [2, 4],
        [
          [1, 2, 3],
          [4, 5, 6, 7, 8],
        ],
      ),
      'ragged_data',
      /^input 'features': nested data is ragged/,
    );
    expectRejected(features([2, 4], [[1, 2, 3, 4], 5, 6, 7, 8]), 'ragged_data', /nested data is ragged/);
  });

  test('data nested deeper than the shape (and no stack overflow on absurd nesting)', () => {
    expectRejected(
      features([1, 4], [[[1, 2, 3, 4]]]),
      'shape_data_mismatch',
      "input 'features': data is nested deeper than its shape's 2 dimension(s)",
    );
    const deep = `${'['.repeat(100_000)}1${']'.repeat(100_000)}`;
    const body = `{"inputs":[{"name":"features","datatype":"FP32","shape":[1,4],"data":${deep}}]}`;
    expect(rejection(body).code).toBe('shape_data_mismatch');
  });

  test('batch not first: declared [-1,4], sent [4]', () => {
    expectRejected(
      features([4], [1, 2, 3, 4]),
      'shape_mismatch',
      "input 'features': shape [4] does not match the declared shape [-1,4]; send [N, 4] with the batch size first",
    );
  });

  test('transposed shape: [4,2] against [-1,4]', () => {
    expectRejected(
      features([4, 2], [1, 2, 3, 4, 5, 6, 7, 8]),
      'shape_mismatch',
      /shape \[4,2\] does not match/,
    );
  });

  test('data missing', () => {
    expectRejected(
      features([1, 4], undefined),
      'missing_data',
      `input 'features': "data" must be a list of values in row-major order (flat or nested)`,
    );
  });

  test('values of the wrong type for the datatype', () => {
    expectRejected(
      features([1, 4], [1, 2, '3', 4]),
      'invalid_data',
      'input \'features\': datatype FP32 needs numbers; value 2 is "3"',
    );
    const ints = modelMetadataSchema.parse({
      name: 'm',
      inputs: [{ name: 'x', datatype: 'INT8', shape: [-1] }],
    });
    expectRejected(
      JSON.stringify({ inputs: [{ name: 'x', datatype: 'INT8', shape: [2], data: [1, 300] }] }),
      'invalid_data',
      "input 'x': datatype INT8 needs integers from -128 to 127; value 1 is 300",
      ints,
    );
    const bools = modelMetadataSchema.parse({
      name: 'm',
      inputs: [{ name: 'b', datatype: 'BOOL', shape: [-1] }],
    });
    expectRejected(
      JSON.stringify({ inputs: [{ name: 'b', datatype: 'BOOL', shape: [1], data: [1] }] }),
      'invalid_data',
      "input 'b': datatype BOOL needs true or false; value 0 is 1",
      bools,
    );
  });

  test('BYTES without content_type', () => {
    const body = JSON.stringify({
      inputs: [
        { name: 'city', datatype: 'BYTES', shape: [1], data: ['Paris'] },
        { name: 'rooms', datatype: 'BYTES', shape: [1], data: ['3'], parameters: { content_type: 'str' } },
      ],
    });
    expectRejected(
      body,
      'missing_content_type',
      `input 'city': BYTES data needs parameters.content_type: "str" for text, "base64" for binary such as images`,
      columns,
    );
  });

  test('BYTES with a content_type that is neither str nor base64', () => {
    const body = JSON.stringify({
      inputs: [
        { name: 'image', datatype: 'BYTES', shape: [1], data: ['x'], parameters: { content_type: 'np' } },
      ],
    });
    expectRejected(
      body,
      'invalid_content_type',
      `input 'image': content_type "np" is not valid for BYTES; use "str" for text or "base64" for binary such as images`,
      image,
    );
  });

  test.each([['xml'], ['str'], ['pd'], ['']])('a numeric input with content_type %p', (contentType) => {
    const body = JSON.stringify({
      inputs: [
        {
          name: 'features',
          datatype: 'FP32',
          shape: [1, 4],
          data: [5.1, 3.5, 1.4, 0.2],
          parameters: { content_type: contentType },
        },
      ],
    });
    expectRejected(
      body,
      'invalid_content_type',
      `input 'features': content_type "${contentType}" cannot decode FP32 data; use "np" or leave it out`,
    );
  });

  test('a numeric input with content_type np passes', () => {
    const body = JSON.stringify({
      inputs: [
        {
          name: 'features',
          datatype: 'FP32',
          shape: [1, 4],
          data: [5.1, 3.5, 1.4, 0.2],
          parameters: { content_type: 'np' },
        },
      ],
    });
    expect(validateInferRequest(body, iris)).toEqual({ id: undefined, rows: 1 });
  });

  test('content_type different from the declared one', () => {
    const body = JSON.stringify({
      inputs: [
        { name: 'image', datatype: 'BYTES', shape: [1], data: ['aGk='], parameters: { content_type: 'str' } },
      ],
    });
    expectRejected(
      body,
      'content_type_mismatch',
      `input 'image': content_type "str" does not match the declared "base64"`,
      image,
    );
  });

  // MLServer would hand each of these to the model as raw text: a line break as `base64` wraps its
  // output, missing padding, trailing garbage, the URL-safe alphabet.
  test.each([['aGVsbG8g\nd29ybGQ='], ['not base64!'], ['aGk'], ['aGk=x'], ['a-_b'], ['a==='], ['ab=c']])(
    'base64 that does not decode: %s',
    (value) => {
      const body = JSON.stringify({
        inputs: [
          {
            name: 'image',
            datatype: 'BYTES',
            shape: [1],
            data: [value],
            parameters: { content_type: 'base64' },
          },
        ],
      });
      expectRejected(
        body,
        'invalid_base64',
        "input 'image': value 0 is not valid base64 (standard alphabet A-Z a-z 0-9 + /, padded with =, no line breaks); encode the file with `base64 -w0`",
        image,
      );
    },
  );

  test('BYTES values must be strings', () => {
    const body = JSON.stringify({
      inputs: [
        { name: 'city', datatype: 'BYTES', shape: [1], data: [12], parameters: { content_type: 'str' } },
        { name: 'rooms', datatype: 'BYTES', shape: [1], data: ['3'], parameters: { content_type: 'str' } },
      ],
    });
    expectRejected(
      body,
      'invalid_data',
      "input 'city': datatype BYTES needs strings; value 0 is 12",
      columns,
    );
  });

  test('inputs with different batch sizes', () => {
    const body = JSON.stringify({
      inputs: [
        {
          name: 'city',
          datatype: 'BYTES',
          shape: [2],
          data: ['Paris', 'Lyon'],
          parameters: { content_type: 'str' },
        },
        { name: 'rooms', datatype: 'BYTES', shape: [1], data: ['3'], parameters: { content_type: 'str' } },
      ],
    });
    expectRejected(
      body,
      'batch_mismatch',
      "input 'rooms': batch size 1 differs from input 'city' (2); every input needs the same number of rows",
      columns,
    );
  });

  test('the error carries the field at fault', () => {
    const e = rejection(features([2, 4], [1, 2, 3]));
    expect(e.field).toBe('inputs[features].data');
    expect(e.toJSON()).toEqual({
      error: "input 'features': shape [2,4] needs 8 values, data has 3",
      code: 'shape_data_mismatch',
      field: 'inputs[features].data',
    });
  });
});

describe('a caller’s values quoted in refusals', () => {
  // Nested thousands deep: JSON.stringify of it throws (a 500 that a canary was once charged with).
  const deep = (depth: number): string => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

  test('a datatype, shape or data element nested thousands deep is a 400 quoting a short preview', () => {
    const asDatatype = `{"inputs":[{"name":"features","datatype":${deep(20_000)},"shape":[1,4],"data":[1,2,3,4]}]}`;
    expectRejected(
      asDatatype,
      'invalid_datatype',
      /^input 'features': datatype \{"a":\{"a":\{"a":\{…\}\}\}\} is not/,
    );
    const asShape = `{"inputs":[{"name":"features","datatype":"FP32","shape":${deep(20_000)},"data":[1,2,3,4]}]}`;
    expectRejected(asShape, 'invalid_shape', /got \{"a":\{"a":\{"a":\{…\}\}\}\}$/);
    const asData = `{"inputs":[{"name":"features","datatype":"FP32","shape":[1,4],"data":[1,2,3,${deep(20_000)}]}]}`;
    expectRejected(asData, 'invalid_data', /value 3 is \{"a":\{"a":\{"a":\{…\}\}\}\}$/);
  });

  test('a huge value is quoted in at most 80 characters', () => {
    const shape = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`d${i}`, -1]));
    const e = rejection(features(shape, [1, 2, 3, 4]));
    expect([e.status, e.code]).toEqual([400, 'invalid_shape']);
    const quoted = e.message.slice(e.message.indexOf('got ') + 4);
    expect(quoted.length).toBeLessThanOrEqual(80);
    expect(quoted).toMatch(/^\{"d0":-1,"d1":-1,.*…$/);
    const text = rejection(features([1, 4], [1, 2, 'x'.repeat(100_000), 4]));
    expect(text.message).toMatch(/value 2 is "x{70,80}…$/);
    expect(text.message.length).toBeLessThan(200);
  });
});

test('an input name longer than a tensor name is refused without quoting it', () => {
  const e = rejection(
    JSON.stringify({ inputs: [{ name: 'n'.repeat(100_000), datatype: 'FP32', shape: [1], data: [1] }] }),
  );
  expect([e.status, e.code, e.field]).toEqual([400, 'invalid_input', 'inputs[0].name']);
  expect(e.message).toBe("inputs[0].name is 100000 characters; an input's name is at most 256");
});

describe('the rows of a batch', () => {
  const meta = (shape: number[]): ModelMetadata =>
    modelMetadataSchema.parse({
      name: 'model-x',
      platform: '',
      versions: [],
      inputs: [
        { name: 'a', datatype: 'FP32', shape },
        { name: 'b', datatype: 'FP32', shape },
      ],
      outputs: [],
    });
  const input = (name: string, shape: number[]) => ({
    name,
    datatype: 'FP32',
    shape,
    data: Array.from({ length: shape.reduce((x, y) => x * y, 1) }, () => 1),
  });

  it('are the first dimension of the inputs: the largest, so a second input of many rows is never free', () => {
    expect(
      validateInferRequest({ inputs: [input('a', [3, 2]), input('b', [3, 2])] }, meta([-1, 2])).rows,
    ).toBe(3);
    // A model that declares no inputs leaves them free to disagree: the batch is the largest.
    const undeclared = { ...meta([]), inputs: [] };
    expect(validateInferRequest({ inputs: [input('a', [1, 2]), input('b', [5, 2])] }, undeclared).rows).toBe(
      5,
    );
    expect(
      validateInferRequest({ inputs: [input('a', [0, 2]), input('b', [0, 2])] }, meta([-1, 2])).rows,
    ).toBe(0);
  });
});
