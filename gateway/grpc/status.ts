import { Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import { TollgateError, isTollgateError } from '../../common/errors.js';

/**
 * THE mapping from the gateway's errors to gRPC statuses, by the HTTP status each code has
 * (common/errors.ts), as KServe and Triton map theirs. The message starts with the same stable
 * code the REST answer carries ("shape_mismatch: input 'x' ..."), and the trailers repeat it as
 * `tollgate-code` (with `retry-after` where the REST answer has it), so a client can branch on it
 * without parsing text.
 */
export function grpcStatusOf(httpStatus: number): Status {
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
    case 502:
    case 503:
      return Status.UNAVAILABLE;
    default:
      return Status.INTERNAL;
  }
}

export interface RestError {
  status: number;
  code: string;
  message: string;
  headers: Record<string, string>;
}

/** A TollgateError raised by the gRPC layer itself, in the REST error's terms. */
export function restErrorOf(err: unknown): RestError {
  const known = isTollgateError(err)
    ? err
    : new TollgateError('internal_error', 'the gateway failed unexpectedly; see its logs', { cause: err });
  return { status: known.status, code: known.code, message: known.message, headers: known.headers };
}

export function serviceError(err: RestError, requestId: string | undefined): Partial<ServiceError> {
  const metadata = new Metadata();
  metadata.set('tollgate-code', err.code);
  const retryAfter = err.headers['retry-after'];
  if (retryAfter !== undefined) metadata.set('retry-after', retryAfter);
  if (requestId !== undefined) metadata.set('x-request-id', requestId);
  return { code: grpcStatusOf(err.status), details: `${err.code}: ${err.message}`, metadata };
}
