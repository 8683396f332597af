import { randomUUID } from 'node:crypto';
import {
  SignJWT,
  createLocalJWKSet,
  importJWK,
  jwtVerify,
  type CryptoKey,
  type JWK,
  type JWTVerifyGetKey,
} from 'jose';
import { growingLru } from '../../common/growing-lru.js';
import { z } from 'zod';
import { TollgateError } from '../../common/errors.js';
import type { Redis } from 'ioredis';
import type { TrustedKeys } from '../../common/redis/sealed-entry.js';
import { redisKeys } from '../../common/redis/schema.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { ALG, openKeyFile } from '../../common/crypto/key-file.js';

/**
 * A grant the central gateway hands to a sidecar: the key's grant, signed (ES256, jose) for one
 * workflow service and a few seconds, in the `X-Tollgate-Grant` header of the forwarded call. The
 * sidecar verifies it offline instead of looking the key up in Redis again. The audience is the one
 * workload the grant is for (common/resources/grant.ts `grantAudience`). Forged (another key,
 * another audience), expired and replayed grants are refused; each grant passes once per sidecar
 * (its id is remembered until it expires).
 */
export const GRANT_HEADER = 'x-tollgate-grant';
const ISSUER = 'urn:tollgate:gateway';
const TTL_SECONDS = 10;

/** The one call a grant is good for: its method and request target as the sidecar receives them. */
export interface GrantedCall {
  method: string;
  /** Path and query, exactly as sent upstream. */
  target: string;
}

const claimsSchema = z.object({
  kid: z.string().min(1),
  /** The call's method and request target (binding the grant to one call). */
  htm: z.string().min(1),
  htt: z.string().min(1),
  own: z.string(),
  mod: z.enum(['bda', 'platform']),
  roles: z.array(z.string()),
  /** The key's model scope, when it has one: the sidecar holds the call to it too. */
  models: z.array(z.string()).optional(),
  jti: z.string().min(1),
  exp: z.number(),
});

export class GrantSigner {
  private constructor(
    private readonly key: CryptoKey | Uint8Array,
    private readonly kid: string,
  ) {}

  /** The signing key in `file` (made on first use; on a cluster, the operator's Secret mounted). */
  static async open(file: string): Promise<GrantSigner> {
    const stored = await openKeyFile(file);
    return new GrantSigner(await importJWK(stored, ALG), stored.kid);
  }

  sign(grant: KeyGrant, audience: string, call: GrantedCall): Promise<string> {
    const claims = {
      kid: grant.id,
      own: grant.owner,
      mod: grant.module,
      roles: grant.roles,
      ...(grant.models === undefined ? {} : { models: grant.models }),
    };
    return new SignJWT({ ...claims, htm: call.method, htt: call.target })
      .setProtectedHeader({ alg: ALG, kid: this.kid, typ: 'tollgate-grant+jwt' })
      .setIssuer(ISSUER)
      .setAudience(audience)
      .setJti(randomUUID())
      .setIssuedAt()
      .setExpirationTime(`${TTL_SECONDS}s`)
      .sign(this.key);
  }
}

/**
 * The headers of a call to a workload: `headers` as they are, or, for a workload behind a sidecar
 * (its route names the audience), with the caller's grant signed for it.
 */
export async function withSignedGrant(
  signer: GrantSigner | undefined,
  headers: string[],
  grant: KeyGrant,
  audience: string | undefined,
  call: GrantedCall,
): Promise<string[]> {
  if (audience === undefined) return headers;
  if (signer === undefined) {
    throw new TollgateError(
      'grant_signer_unavailable',
      'this service answers through a Tollgate sidecar, and this gateway has no grant signing key to vouch for the call (set grantSigningKeyFile; the chart mounts the operator’s)',
    );
  }
  return headers.concat(GRANT_HEADER, await signer.sign(grant, audience, call));
}

/**
 * The headers of each try of one call that may be tried again: the first try's made now (a
 * gateway that cannot sign says so, as for any call), each later one's made anew. A sidecar spends
 * a grant as it verifies it, before its workload answers, so a try after a dropped connection with
 * the first try's grant would be refused by the next replica as used already.
 */
export async function headersPerTry(make: () => Promise<string[]>): Promise<() => Promise<string[]>> {
  let first: string[] | undefined = await make();
  return async () => {
    const headers = first ?? (await make());
    first = undefined;
    return headers;
  };
}

/** Grants that came signed from the central gateway, which has counted their use already. */
const signed = new WeakSet<KeyGrant>();
export const countedUpstream = (grant: KeyGrant): boolean => signed.has(grant);

const invalid = (why: string): TollgateError =>
  new TollgateError(
    'invalid_grant',
    `the X-Tollgate-Grant header is not a valid grant for this service: ${why}`,
  );

/**
 * Claims a grant's id once for every replica: true if this is its first use. In Redis, so a grant
 * seen on the wire cannot be spent again at another replica of the same workload.
 */
export type ClaimGrant = (jti: string, ttlMs: number) => Promise<boolean>;

const REPLAY_TTL_MS = (TTL_SECONDS + 5) * 1000;
/** Clocks of the signing gateway and a verifying sidecar may differ by this much. */
const CLOCK_TOLERANCE_S = 2;

export function claimInRedis(redis: Redis): ClaimGrant {
  return async (jti, ttlMs) => {
    try {
      return (await redis.set(redisKeys.grantUsed(jti), '1', 'PX', ttlMs, 'NX')) === 'OK';
    } catch (cause) {
      throw redisUnavailable(cause);
    }
  };
}

export class GrantVerifier {
  /**
   * Ids of grants recently used here: a replay to this replica costs no I/O. Only a shortcut (the
   * claim in Redis is what refuses a replay), so it holds about a grant lifetime's worth at 1,000
   * calls a second: expired ids leave only when newer ones push them out.
   */
  private readonly seen = growingLru<string, true>(16_384, { ttl: REPLAY_TTL_MS });

  constructor(
    private readonly keys: JWTVerifyGetKey,
    private readonly audience: string,
    private readonly claim: ClaimGrant,
  ) {}

  /**
   * Verified with the public keys this process was given (a sidecar's trusted keys, which the
   * webhook injects), never with keys read from Redis: whoever could write Redis could otherwise
   * sign grants.
   */
  static fromTrust(trusted: TrustedKeys, audience: string, claim: ClaimGrant): GrantVerifier {
    return new GrantVerifier(createLocalJWKSet(trusted as { keys: JWK[] }), audience, claim);
  }

  async verify(token: string, call: GrantedCall): Promise<KeyGrant> {
    let claims: z.infer<typeof claimsSchema>;
    let expiresAtMs: number;
    try {
      const { payload } = await jwtVerify(token, this.keys, {
        issuer: ISSUER,
        audience: this.audience,
        algorithms: [ALG],
        typ: 'tollgate-grant+jwt',
        clockTolerance: CLOCK_TOLERANCE_S,
        // Never longer-lived than the signer makes them, whatever its expiry says.
        maxTokenAge: `${TTL_SECONDS}s`,
      });
      claims = claimsSchema.parse(payload);
      expiresAtMs = ((payload.exp ?? 0) + CLOCK_TOLERANCE_S) * 1000;
    } catch (err) {
      if (err instanceof TollgateError) throw err;
      const code = (err as { code?: string }).code;
      if (code === 'ERR_JWT_EXPIRED') throw invalid('it has expired; a grant is good for a few seconds');
      if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && (err as { claim?: string }).claim === 'iat')
        throw invalid(
          "it was issued in the future or too long ago (this clock and the signing gateway's differ)",
        );
      if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') throw invalid('it was made for another service');
      throw invalid('its signature or its shape is wrong');
    }
    if (claims.htm !== call.method || claims.htt !== call.target)
      throw invalid('it was made for another call (a grant is good for one method and path)');
    if (this.seen.has(claims.jti)) throw invalid('it was used already; a grant passes once');
    this.seen.set(claims.jti, true);
    // Claimed for as long as this replica would take the grant: the signer's clock may be ahead.
    if (!(await this.claim(claims.jti, Math.max(REPLAY_TTL_MS, expiresAtMs - Date.now() + 1_000))))
      throw invalid('it was used already; a grant passes once');
    const grant: KeyGrant = {
      id: claims.kid,
      owner: claims.own,
      module: claims.mod,
      roles: claims.roles,
      ...(claims.models === undefined ? {} : { models: claims.models }),
    };
    signed.add(grant);
    return grant;
  }
}
