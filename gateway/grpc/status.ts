import { Metadata, status as Status } from '@grpc/grpc-js';
import { TollgateError, isTollgateError } from '../../common/errors.js';

/**
 * THE mapping from the gateway's errors to gRPC statuses, by the HTTP status each code has
 * (common/errors.ts), as KServe and Triton map theirs. The message starts with the same stable
 * code the REST answer carries ("shape_mismatch: input 'x' ..."), and the trailers repeat it as
 * `tollgate-code` (with `tollgate-field` and `retry-after` where the REST answer has them), so a
 * client can branch on it without parsing text.
 */

/** Trailers travel in one HTTP/2 header block: a message past this (percent-encoded) is clipped. */
const MAX_DETAILS = 3_000;

/** 502s that say "try again": the runtime could not be reached, or its metadata read. */
const RETRYABLE = new Set(['upstream_connection_failed', 'model_metadata_unavailable']);

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Whole characters (a surrogate pair never cut), well-formed (grpc-js throws on a status message it
 * cannot encode), and at most `max` bytes once percent-encoded, as grpc-js sends them: a client's
 * header limit (8 KiB in C-core clients) is never what refuses the status.
 */
function clipped(text: string, max: number): string {
  let out = '';
  let size = 0;
  for (const ch of text.replace(LONE_SURROGATE, '\uFFFD')) {
    size += encodeURIComponent(ch).length;
    if (size > max) return `${out}...`;
    out += ch;
  }
  return out;
}

function grpcStatusOf(httpStatus: number, code: string): Status {
  switch (httpStatus) {
    case 400:
    case 405:
    case 415:
    case 422:
      return Status.INVALID_ARGUMENT;
    case 401:
      return Status.UNAUTHENTICATED;
    case 403:
      return Status.PERMISSION_DENIED;
    case 404:
      return Status.NOT_FOUND;
    case 408:
    case 504:
      return Status.DEADLINE_EXCEEDED;
    case 409:
      return Status.ABORTED;
    case 413:
    case 429:
    case 431:
      return Status.RESOURCE_EXHAUSTED;
    case 503:
      return Status.UNAVAILABLE;
    default:
      // A runtime that could not be reached may be retried; a model that failed on this request
      // (502 model_failed) or a gateway fault would fail again.
      return RETRYABLE.has(code) ? Status.UNAVAILABLE : Status.INTERNAL;
  }
}

/** An error as REST would answer it: its status, code, message, field and headers. */
export interface RestError {
  status: number;
  code: string;
  message: string;
  headers: Record<string, string>;
  field?: string;
}

/** A TollgateError raised by the gRPC layer itself (anything else is an opaque internal error), in REST's terms. */
export function restErrorOf(err: unknown): RestError {
  const known = isTollgateError(err)
    ? err
    : new TollgateError('internal_error', 'the gateway failed unexpectedly; see its logs', { cause: err });
  return {
    status: known.status,
    code: known.code,
    message: known.message,
    headers: known.headers,
    ...(known.field === undefined ? {} : { field: known.field }),
  };
}

/** The status a call ends with: for a handler's callback and an interceptor's sendStatus alike. */
export interface CallStatus {
  code: Status;
  details: string;
  metadata: Metadata;
}

export function serviceError(err: RestError, requestId?: string): CallStatus {
  const metadata = new Metadata();
  metadata.set('tollgate-code', err.code);
  // Metadata values are printable ASCII: a field naming a client's input is percent-encoded.
  if (err.field !== undefined) metadata.set('tollgate-field', encodeURIComponent(clipped(err.field, 600)));
  const retryAfter = err.headers['retry-after'];
  if (retryAfter !== undefined) metadata.set('retry-after', retryAfter);
  if (requestId !== undefined) metadata.set('x-request-id', requestId);
  return {
    code: grpcStatusOf(err.status, err.code),
    details: clipped(`${err.code}: ${err.message}`, MAX_DETAILS),
    metadata,
  };
}
