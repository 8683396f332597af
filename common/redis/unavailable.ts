import { TollgateError } from '../errors.js';

/**
 * The one `redis_unavailable` error. Fail closed: when Redis cannot answer, nothing that depends on
 * it passes unchecked. `what` says which operation could not be done, for the caller's message.
 */
export const redisUnavailable = (
  cause: unknown,
  what = 'the key store is unreachable, so no call can be checked',
): TollgateError =>
  new TollgateError('redis_unavailable', `${what}; retry when Redis is back`, {
    cause,
    headers: { 'retry-after': '1' },
  });
