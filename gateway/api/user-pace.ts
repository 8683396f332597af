import type { RequestHandler } from 'express';
import { LRUCache } from 'lru-cache';
import { TollgateError } from '../../common/errors.js';
import { callerOf } from '../auth/oidc.js';

/** Calls one user may make of a replica's management API a second, unless configured. */
const DEFAULT_CALLS_PER_SECOND = 50;
/** The burst: this many seconds' worth (a script making a few hundred keys at once passes). */
const BURST_SECONDS = 10;

/**
 * Paces each user's management calls on this replica (a token bucket per user). Several routes
 * list every team's objects from the Kubernetes API server or read the audit store, so one user
 * calling in a loop would load what every team depends on; a panel's page takes a few calls.
 */
export function userPace(perSecond = DEFAULT_CALLS_PER_SECOND): RequestHandler {
  const burst = perSecond * BURST_SECONDS;
  const buckets = new LRUCache<string, { tokens: number; at: number }>({ max: 50_000 });
  return (_req, res, next) => {
    const subject = callerOf(res).subject;
    const now = Date.now();
    const bucket = buckets.get(subject) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
    bucket.at = now;
    buckets.set(subject, bucket);
    if (bucket.tokens < 1) {
      const wait = Math.ceil((1 - bucket.tokens) / perSecond);
      throw new TollgateError(
        'rate_limited',
        `you made more than a burst of ${burst} management calls, past ${perSecond} a second; wait ${wait} s and call less often`,
        { headers: { 'retry-after': String(wait) } },
      );
    }
    bucket.tokens -= 1;
    next();
  };
}
