import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { TollgateError } from '../../common/errors.js';
import { redisKeys } from '../../common/redis/schema.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';
import type { Caller, TokenVerifier } from './oidc.js';

/**
 * How long an offboarding refuses the user's earlier tokens: longer than any access token lives
 * (providers issue them for minutes to hours), so every token issued before it has expired first.
 */
export const OFFBOARDED_TOKEN_BLOCK_SECONDS = 7 * 86_400;

const digest = (subject: string): string => createHash('sha256').update(subject).digest('hex');

/**
 * Users who were offboarded, shared by every gateway replica through Redis: the access tokens a
 * user held when they were offboarded are refused (a token signed before the moment, or with no
 * `iat`), so no key can be made, rolled or listed with them. A token issued later (the user back,
 * signed in again) passes. Only the gateways' and the operator's Redis users may write it; a
 * lost marker (Redis flushed) reopens at most the tokens still unexpired, never a key.
 */
export class OffboardedUsers {
  constructor(
    private readonly redis: Redis,
    /** How far the provider's clock may run ahead of this one (the token check's tolerance). */
    private readonly clockSkewMs = 30_000,
    private readonly blockSeconds = OFFBOARDED_TOKEN_BLOCK_SECONDS,
  ) {}

  async mark(subject: string, atMs = Date.now()): Promise<void> {
    try {
      await this.redis.set(redisKeys.offboarded(digest(subject)), String(atMs), 'EX', this.blockSeconds);
    } catch (cause) {
      throw redisUnavailable(cause);
    }
  }

  /** When the user was offboarded, within the block window; undefined if they were not. */
  async offboardedAt(subject: string): Promise<number | undefined> {
    let at: string | null;
    try {
      at = await this.redis.get(redisKeys.offboarded(digest(subject)));
    } catch (cause) {
      throw redisUnavailable(cause);
    }
    return at === null ? undefined : Number(at);
  }

  async check(caller: Caller): Promise<void> {
    let at: string | null;
    try {
      at = await this.redis.get(redisKeys.offboarded(digest(caller.subject)));
    } catch (cause) {
      throw redisUnavailable(cause);
    }
    if (at === null) return;
    // Signed after the offboarding, by more than the clocks may disagree, and for a sign-in after
    // it too (`auth_time`: a token refreshed from an earlier sign-in keeps that time).
    const after = (s: number | undefined) => s !== undefined && s * 1000 > Number(at) + this.clockSkewMs;
    if (after(caller.issuedAt) && (caller.authTime === undefined || after(caller.authTime))) return;
    throw new TollgateError(
      'token_revoked',
      `this user was offboarded at ${new Date(Number(at)).toISOString()}: tokens issued before then are refused; sign in again if your access was restored`,
      { headers: { 'WWW-Authenticate': 'Bearer realm="tollgate", error="invalid_token"' } },
    );
  }

  /** `verify`, then refused if the token predates its user's offboarding. */
  guard(verify: TokenVerifier): TokenVerifier {
    return async (token) => {
      const caller = await verify(token);
      await this.check(caller);
      return caller;
    };
  }
}
