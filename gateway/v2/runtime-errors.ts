import { TollgateError } from '../../common/errors.js';
import { upstreamFailure } from '../proxy/upstream-errors.js';

/**
 * MLServer's error answers, in the V2 error shape with a stable code. It speaks three dialects:
 * its own `{"error": "..."}` (400 for an InferenceError, 404 for a model it does not serve),
 * FastAPI's 422 `{"detail": [{loc, msg}]}` when the body does not fit the V2 schema, and a 500
 * with a Python traceback as text/plain when the model raised. The traceback is never passed on
 * (it names files and internals); its last line, the exception, is what the client can act on.
 */

/** Exceptions a model raises when the data is wrong for it, not when it is broken. */
const INPUT_EXCEPTIONS =
  /^(ValueError|TypeError|KeyError|IndexError|binascii\.Error|PIL\.UnidentifiedImageError|UnidentifiedImageError)\b/;
const MAX_MESSAGE = 500;

interface FastApiIssue {
  loc?: unknown[];
  msg?: string;
}

const clip = (s: string): string => (s.length > MAX_MESSAGE ? `${s.slice(0, MAX_MESSAGE)}...` : s);

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** `["body","inputs",0,"datatype"]` → `inputs[0].datatype` */
function location(loc: unknown[] | undefined): string {
  let out = '';
  for (const part of (loc ?? []).slice(1)) {
    out += typeof part === 'number' ? `[${part}]` : `${out === '' ? '' : '.'}${String(part)}`;
  }
  return out === '' ? 'body' : out;
}

/** The exception line at the end of a Python traceback, e.g. "ValueError: cannot reshape ...". */
function exceptionLine(body: string): string | undefined {
  const lines = body.trimEnd().split('\n');
  const last = lines[lines.length - 1]?.trim();
  return last !== undefined && /^[\w.]+(Error|Exception)\b/.test(last) ? last : undefined;
}

export function runtimeError(model: string, status: number, body: string): TollgateError {
  const json = parseJson(body);
  const detail = (json as { detail?: unknown } | undefined)?.detail;
  if (status === 422 && Array.isArray(detail)) {
    const issues = (detail as FastApiIssue[]).map((d) => `${location(d.loc)}: ${d.msg ?? 'invalid'}`);
    return new TollgateError(
      'invalid_inference_request',
      clip(`the runtime refused the request: ${issues.join('; ')}`),
      {
        field: location((detail[0] as FastApiIssue | undefined)?.loc),
      },
    );
  }
  const error = (json as { error?: unknown } | undefined)?.error;
  if (typeof error === 'string') {
    if (status === 404) {
      return new TollgateError(
        'model_not_ready',
        `model '${model}' is not loaded by its runtime yet; retry shortly`,
        {
          headers: { 'retry-after': '1' },
        },
      );
    }
    if (status >= 400 && status < 500)
      return new TollgateError('inference_error', clip(`model '${model}': ${error}`));
  }
  if (status >= 500) {
    const exception = exceptionLine(body);
    if (exception !== undefined && INPUT_EXCEPTIONS.test(exception)) {
      return new TollgateError(
        'model_rejected_input',
        clip(
          `model '${model}' could not use the request: ${exception}; check the inputs against GET /v2/models/${model}`,
        ),
      );
    }
    return new TollgateError(
      'model_failed',
      clip(
        `model '${model}' failed on this request${exception === undefined ? '' : ` (${exception})`}; see the runtime's logs`,
      ),
    );
  }
  return new TollgateError(
    'model_failed',
    `model '${model}' answered ${status} with a body the gateway cannot read`,
  );
}

/**
 * A runtime that refuses the connection is restarting or being replaced (its route is about to
 * change): for a client that is "not ready, retry", not a gateway failure.
 */
export function runtimeUnreachable(model: string, err: Error): TollgateError {
  if ((err as { code?: unknown }).code === 'ECONNREFUSED') {
    return new TollgateError('model_not_ready', `model '${model}' is restarting; retry shortly`, {
      cause: err,
      headers: { 'retry-after': '1' },
    });
  }
  return upstreamFailure(err);
}
