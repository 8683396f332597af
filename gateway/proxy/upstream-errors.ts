import { TollgateError } from '../../common/errors.js';

/**
 * What a failed call to an upstream (a workflow service, a model's runtime) means to its caller:
 * one place for the proxied calls (forward.ts) and the runtime's (upstream-pools.ts, v2/).
 */

export function interimPastDeadline(): TollgateError {
  return new TollgateError(
    'upstream_timeout',
    'the upstream service sent only interim (1xx) answers and no final one in time',
  );
}

export function answerPastDeadline(): TollgateError {
  return new TollgateError(
    'upstream_timeout',
    "the upstream service did not finish its answer in time (it is read whole within twice the gateway's upstream timeout)",
  );
}

const TIMEOUTS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const UNAVAILABLE = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
]);

/** What an upstream failure means to the caller (one the gateway raised itself says so already). */
export function upstreamFailure(err: Error): TollgateError {
  if (err instanceof TollgateError) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && TIMEOUTS.has(code)) {
    return new TollgateError('upstream_timeout', 'the upstream service did not answer in time', {
      cause: err,
    });
  }
  if (typeof code === 'string' && UNAVAILABLE.has(code)) {
    return new TollgateError(
      'upstream_unavailable',
      'the upstream service is not available right now; retry shortly',
      {
        cause: err,
        headers: { 'retry-after': '1' },
      },
    );
  }
  return new TollgateError(
    'upstream_connection_failed',
    'the gateway could not talk to the upstream service',
    {
      cause: err,
    },
  );
}
