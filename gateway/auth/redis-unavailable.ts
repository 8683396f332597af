import { TollgateError } from '../../common/errors.js';

/** Fail closed: when Redis cannot answer, no request passes unchecked. */
export const redisUnavailable = (cause: unknown): TollgateError =>
  new TollgateError(
    503,
    'redis_unavailable',
    'the key store is unreachable, so no call can be checked; retry shortly',
    {
      cause,
      headers: { 'retry-after': '1' },
    },
  );
