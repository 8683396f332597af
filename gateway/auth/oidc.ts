import type { RequestHandler, Response } from 'express';
import { createRemoteJWKSet, errors, jwtVerify } from 'jose';
import { TollgateError } from '../../common/errors.js';

/**
 * Users of the management API are identified by an OIDC bearer token (a JWT), verified against the
 * identity provider's JWKS. Standalone mode uses the same path: its local issuer (local-issuer.ts)
 * publishes a JWKS on the gateway itself.
 */
export interface OidcConfig {
  issuer: string;
  audience: string;
  jwksUrl: string;
}

/** The authenticated user: `subject` is the token's `sub`, the owner recorded on keys. */
export interface Caller {
  subject: string;
}

export type TokenVerifier = (token: string) => Promise<Caller>;

const CLOCK_TOLERANCE_SECONDS = 30;
const MAX_SUBJECT_LENGTH = 255;
const BEARER = /^Bearer +([A-Za-z0-9\-_.~+/]+=*) *$/i;

const challenge = (error?: string): Record<string, string> => ({
  'WWW-Authenticate':
    error === undefined ? 'Bearer realm="tollgate"' : `Bearer realm="tollgate", error="${error}"`,
});

export function createTokenVerifier(config: OidcConfig): TokenVerifier {
  // jose caches the key set and refetches it (rate-limited) when a token names an unknown kid, so
  // a key rotation at the provider is picked up without a restart.
  const jwks = createRemoteJWKSet(new URL(config.jwksUrl));
  return async (token) => {
    let subject: unknown;
    try {
      const { payload } = await jwtVerify(token, jwks, {
        issuer: config.issuer,
        audience: config.audience,
        requiredClaims: ['sub', 'exp'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      });
      subject = payload.sub;
    } catch (e) {
      throw tokenError(e);
    }
    // The subject becomes the owner recorded on every key the user creates. jose checks only that
    // `sub` is present, so a signed token could still carry a number, null or "" there.
    if (typeof subject !== 'string' || subject === '' || subject.length > MAX_SUBJECT_LENGTH) {
      throw new TollgateError(
        'invalid_token',
        `the token's subject must be a string of 1 to ${MAX_SUBJECT_LENGTH} characters`,
        {
          headers: challenge('invalid_token'),
        },
      );
    }
    return { subject };
  };
}

function tokenError(e: unknown): TollgateError {
  if (e instanceof errors.JWTExpired) {
    return new TollgateError('token_expired', 'the bearer token has expired; sign in again for a new one', {
      headers: challenge('invalid_token'),
      cause: e,
    });
  }
  if (e instanceof errors.JWKSTimeout || !(e instanceof errors.JOSEError)) {
    return new TollgateError(
      'identity_provider_unavailable',
      'the identity provider’s keys (JWKS) cannot be fetched; retry shortly',
      {
        cause: e,
      },
    );
  }
  const reason =
    e instanceof errors.JWTClaimValidationFailed
      ? `claim ${e.claim} is not accepted (${e.reason})`
      : 'its signature or format is not valid';
  return new TollgateError('invalid_token', `the bearer token was refused: ${reason}; sign in again`, {
    headers: challenge('invalid_token'),
    cause: e,
  });
}

/** Express middleware: verifies `Authorization: Bearer <token>` and records the caller. */
export function authenticateUser(verify: TokenVerifier): RequestHandler {
  return async (req, res, next) => {
    const header = req.headers.authorization;
    if (header === undefined || header === '') {
      throw new TollgateError(
        'missing_token',
        'this API needs "Authorization: Bearer <token>" with an OIDC token',
        {
          headers: challenge(),
        },
      );
    }
    const match = BEARER.exec(header);
    if (match?.[1] === undefined) {
      throw new TollgateError('invalid_token', 'the Authorization header must be "Bearer <token>"', {
        headers: challenge('invalid_request'),
      });
    }
    res.locals.caller = await verify(match[1]);
    next();
  };
}

/** The caller recorded by `authenticateUser`. */
export function callerOf(res: Response): Caller {
  const caller = res.locals.caller as Caller | undefined;
  if (caller === undefined) throw new Error('callerOf used on a route without authenticateUser');
  return caller;
}
