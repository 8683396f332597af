import { runtimeError, runtimeUnreachable } from '../../../gateway/v2/runtime-errors.js';

// Bodies as MLServer 1.7.1 sends them (captured from the venv's runtime).
const traceback = (last: string): string =>
  [
    'Traceback (most recent call last):',
    '  File "/venv/lib/python3.11/site-packages/mlserver/codecs/numpy.py", line 163, in decode_input',
    '    return model_data.reshape(request_input.shape)',
    last,
    '',
  ].join('\n');

describe("MLServer's errors in the V2 shape", () => {
  test("a reshape failure (500 traceback) is the client's 400, without the traceback", () => {
    const e = runtimeError(
      'model-iris',
      500,
      traceback('ValueError: cannot reshape array of size 6 into shape (2,4)'),
    );
    expect(e.status).toBe(400);
    expect(e.code).toBe('model_rejected_input');
    expect(e.message).toBe(
      "model 'model-iris' could not use the request: ValueError: cannot reshape array of size 6 into shape (2,4); check the inputs against GET /v2/models/model-iris",
    );
    expect(e.message).not.toContain('site-packages');
  });

  test('a model that breaks on its own is a 502 naming the exception', () => {
    const e = runtimeError('model-x', 500, traceback('RuntimeError: out of threads'));
    expect(e.status).toBe(502);
    expect(e.code).toBe('model_failed');
    expect(e.message).toBe(
      "model 'model-x' failed on this request (RuntimeError: out of threads); see the runtime's logs",
    );
  });

  test('a 500 with no traceback', () => {
    const e = runtimeError('model-x', 500, 'Internal Server Error');
    expect([e.status, e.code, e.message]).toEqual([
      502,
      'model_failed',
      "model 'model-x' failed on this request; see the runtime's logs",
    ]);
  });

  test("FastAPI's 422 detail becomes a 400 naming the field", () => {
    const body = JSON.stringify({
      detail: [{ type: 'missing', loc: ['body', 'inputs', 0, 'datatype'], msg: 'Field required', input: {} }],
    });
    const e = runtimeError('model-iris', 422, body);
    expect(e.toJSON()).toEqual({
      error: 'the runtime refused the request: inputs[0].datatype: Field required',
      code: 'invalid_inference_request',
      field: 'inputs[0].datatype',
    });
    expect(e.status).toBe(400);
  });

  test("MLServer's InferenceError (400 {error}) keeps its message", () => {
    const body = JSON.stringify({
      error:
        "SKLearnModel only supports 'predict', 'predict_proba' and 'transform' as outputs (scores was received)",
    });
    const e = runtimeError('model-iris', 400, body);
    expect([e.status, e.code, e.message]).toEqual([
      400,
      'inference_error',
      "model 'model-iris': SKLearnModel only supports 'predict', 'predict_proba' and 'transform' as outputs (scores was received)",
    ]);
  });

  test('a runtime that does not serve the model yet (404) is 503 model_not_ready', () => {
    const e = runtimeError('model-iris', 404, JSON.stringify({ error: 'Model model-iris not found' }));
    expect([e.status, e.code, e.headers['retry-after']]).toEqual([503, 'model_not_ready', '1']);
  });

  test('an unreadable answer', () => {
    const e = runtimeError('model-iris', 418, '<html>');
    expect([e.status, e.code]).toEqual([502, 'model_failed']);
  });

  test('a runtime refusing connections is restarting: 503 model_not_ready; other failures as any upstream', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const e = runtimeUnreachable('model-iris', refused);
    expect([e.status, e.code, e.message, e.headers['retry-after']]).toEqual([
      503,
      'model_not_ready',
      "model 'model-iris' is restarting; retry shortly",
      '1',
    ]);
    const timeout = Object.assign(new Error('timeout'), { code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(runtimeUnreachable('model-iris', timeout).code).toBe('upstream_timeout');
  });
});
