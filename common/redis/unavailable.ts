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

/**
 * Redis answers but the operator has not finished rebuilding it (its index marker is absent: Redis
 * was flushed or came back empty). A key or route not found now may exist: a 401 or 404 would
 * tell a client to throw a valid key away, so the answer is "retry", never "no".
 */
export const indexRebuilding = (): TollgateError =>
  new TollgateError(
    'index_rebuilding',
    'the key and route index is being rebuilt after Redis lost its data; retry in a moment',
    { headers: { 'retry-after': '1' } },
  );
