import type { RequestHandler, Response } from 'express';
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import { TollgateError } from '../../common/errors.js';
import { discoverProvider } from './discovery.js';

/**
 * Users of the management API are identified by an OIDC bearer token (a JWT), verified against the
 * identity provider's JWKS. Standalone mode uses the same path: its local issuer (local-issuer.ts)
 * publishes a JWKS on the gateway itself.
 */
export interface OidcConfig {
  issuer: string;
  audience: string;
  /** Absent: the `jwks_uri` of the issuer's discovery document. */
  jwksUrl?: string | undefined;
  /** Leeway for exp and nbf; 30 s when absent. */
  clockToleranceSeconds?: number;
  /** The clients whose tokens are taken (azp, client_id or cid), besides `clientId`; empty or absent: any. */
  authorizedParties?: readonly string[];
  /** The panel's client, whose tokens are taken whenever `authorizedParties` is set. */
  clientId?: string | undefined;
}

/** Who is an administrator: members of any of `adminGroups`, read from the `groupsClaim` claim. */
export interface AdminPolicy {
  groupsClaim: string;
  adminGroups: readonly string[];
}

/** The authenticated user: `subject` is the token's `sub`, the owner recorded on keys. */
export interface Caller {
  subject: string;
  /** A readable name for listings (preferred_username, email or name), when the token has one. */
  name?: string;
  groups: string[];
  /** A member of an administrator group: may act on every user's keys. */
  admin: boolean;
  /** The token's `iat` (seconds), when it has one. */
  issuedAt?: number;
  /** The token's `auth_time` (seconds): when the user signed in, kept across refreshes. */
  authTime?: number;
}

export type TokenVerifier = (token: string) => Promise<Caller>;

const CLOCK_TOLERANCE_SECONDS = 30;
/** How long a failed discovery answers for itself before the provider is asked again. */
const DISCOVERY_RETRY_MS = 1_000;
const MAX_SUBJECT_LENGTH = 255;
const BEARER = /^Bearer +([A-Za-z0-9\-_.~+/]+=*) *$/i;

const challenge = (error?: string): Record<string, string> => ({
  'WWW-Authenticate':
    error === undefined ? 'Bearer realm="tollgate"' : `Bearer realm="tollgate", error="${error}"`,
});

export function createTokenVerifier(config: OidcConfig, policy: AdminPolicy): TokenVerifier {
  // jose caches the key set and refetches it (rate-limited) when a token names an unknown kid, so
  // a key rotation at the provider is picked up without a restart.
  let jwks: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;
  const keySet = (): Promise<ReturnType<typeof createRemoteJWKSet>> => {
    if (jwks !== undefined) return jwks;
    const made = (async () => {
      const url = config.jwksUrl ?? (await discoverProvider(config.issuer)).jwks_uri;
      if (url === undefined) throw new Error(`the discovery document of ${config.issuer} names no jwks_uri`);
      return createRemoteJWKSet(new URL(url));
    })();
    // A provider that was down is asked again by the first call a moment later: not by every call
    // meanwhile, which any bearer string (valid or not) would make a request to it, each waiting.
    made.catch(() =>
      setTimeout(() => {
        if (jwks === made) jwks = undefined;
      }, DISCOVERY_RETRY_MS).unref(),
    );
    jwks = made;
    return made;
  };
  const admins = new Set(policy.adminGroups);
  return async (token) => {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await keySet(), {
        issuer: config.issuer,
        audience: config.audience,
        requiredClaims: ['sub', 'exp'],
        clockTolerance: config.clockToleranceSeconds ?? CLOCK_TOLERANCE_SECONDS,
      }));
    } catch (e) {
      throw tokenError(e);
    }
    // The panel's own client is always one of them: listing others must not lock the panel out.
    const parties = config.authorizedParties ?? [];
    if (parties.length > 0) {
      const party = [payload['azp'], payload['client_id'], payload['cid']].find((c) => typeof c === 'string');
      if (typeof party !== 'string' || !(parties.includes(party) || party === config.clientId)) {
        throw new TollgateError(
          'invalid_token',
          party === undefined
            ? 'the token names no client it was issued to (azp, client_id or cid), and this gateway takes tokens of its own clients only'
            : 'the token was issued to another application; sign in through the panel or a client this gateway takes (oidc.authorizedParties)',
          { headers: challenge('invalid_token') },
        );
      }
    }
    const subject = payload.sub;
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
    const groups = stringsOf(payload[policy.groupsClaim]);
    const name = displayNameOf(payload);
    return {
      subject,
      ...(name === undefined ? {} : { name }),
      ...(typeof payload.iat === 'number' ? { issuedAt: payload.iat } : {}),
      ...(typeof payload['auth_time'] === 'number' ? { authTime: payload['auth_time'] } : {}),
      groups,
      admin: groups.some((g) => admins.has(g)),
    };
  };
}

/** A groups claim is a list of names (most providers) or one name; anything else holds none. */
function stringsOf(claim: unknown): string[] {
  if (typeof claim === 'string') return [claim];
  return Array.isArray(claim) ? claim.filter((g): g is string => typeof g === 'string') : [];
}

const NAME_CLAIMS = ['preferred_username', 'email', 'name'] as const;
const MAX_NAME_LENGTH = 100;

function displayNameOf(payload: JWTPayload): string | undefined {
  for (const claim of NAME_CLAIMS) {
    const value = payload[claim];
    // Printable text only: the name is shown to administrators in the panel.
    if (typeof value === 'string' && value !== '' && !/[\p{Cc}\p{Cf}]/u.test(value)) {
      return value.slice(0, MAX_NAME_LENGTH);
    }
  }
  return undefined;
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
      'the identity provider’s discovery document or keys (JWKS) cannot be fetched; retry shortly',
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

/** Refuses, with 403 admin_required, a caller who is not an administrator. */
export function requireAdmin(caller: Caller, groupsClaim: string): void {
  if (caller.admin) return;
  throw new TollgateError(
    'admin_required',
    `this needs an administrator: a member of one of the gateway's adminGroups (read from the token's "${groupsClaim}" claim)`,
  );
}
