import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import {
  SignJWT,
  createLocalJWKSet,
  importJWK,
  jwtVerify,
  type CryptoKey,
  type JWK,
  type JWTVerifyGetKey,
} from 'jose';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { ALG, openKeyFile, publicJwk } from './key-file.js';

/**
 * A grant the central gateway hands to a sidecar: the key's grant, signed (ES256, jose) for one
 * workflow service and a few seconds, in the `X-Tollgate-Grant` header of the forwarded call. The
 * sidecar verifies it offline instead of looking the key up in Redis again. Forged (another key,
 * another audience), expired and replayed grants are refused; each grant passes once per sidecar
 * (its id is remembered until it expires).
 */
export const GRANT_HEADER = 'x-tollgate-grant';
const ISSUER = 'urn:tollgate:gateway';
const TTL_SECONDS = 10;
const audience = (workflow: string, service: string) => `urn:tollgate:service:${workflow}/${service}`;

const claimsSchema = z.object({
  kid: z.string().min(1),
  own: z.string(),
  mod: z.enum(['bda', 'platform']),
  roles: z.array(z.string()),
  jti: z.string().min(1),
  exp: z.number(),
});

export class GrantSigner {
  private constructor(
    private readonly key: CryptoKey | Uint8Array,
    private readonly kid: string,
  ) {}

  /** The signing key in `file` (made on first use); its public JWKS is `signer.jwks`. */
  static async open(file: string): Promise<{ signer: GrantSigner; jwks: { keys: JWK[] } }> {
    const stored = await openKeyFile(file);
    return {
      signer: new GrantSigner(await importJWK(stored, ALG), stored.kid),
      jwks: { keys: [publicJwk(stored)] },
    };
  }

  sign(grant: KeyGrant, workflow: string, service: string): Promise<string> {
    return new SignJWT({ kid: grant.id, own: grant.owner, mod: grant.module, roles: grant.roles })
      .setProtectedHeader({ alg: ALG, kid: this.kid, typ: 'tollgate-grant+jwt' })
      .setIssuer(ISSUER)
      .setAudience(audience(workflow, service))
      .setJti(randomUUID())
      .setIssuedAt()
      .setExpirationTime(`${TTL_SECONDS}s`)
      .sign(this.key);
  }
}

/** Grants that came signed from the central gateway, which has counted their use already. */
const signed = new WeakSet<KeyGrant>();
export const countedUpstream = (grant: KeyGrant): boolean => signed.has(grant);

const invalid = (why: string): TollgateError =>
  new TollgateError(
    'invalid_grant',
    `the X-Tollgate-Grant header is not a valid grant for this service: ${why}`,
  );

export class GrantVerifier {
  /** Ids of grants already used, until they expire. */
  private readonly seen = new LRUCache<string, true>({ max: 100_000, ttl: (TTL_SECONDS + 5) * 1000 });

  private constructor(
    private readonly keys: JWTVerifyGetKey,
    private readonly workflow: string,
    private readonly service: string,
  ) {}

  /** The public keys of the central gateways (a JWKS file), for the sidecar of one service. */
  static async fromJwksFile(file: string, workflow: string, service: string): Promise<GrantVerifier> {
    const jwks = z
      .object({ keys: z.array(z.record(z.string(), z.unknown())).min(1) })
      .parse(JSON.parse(await readFile(file, 'utf8')));
    return new GrantVerifier(createLocalJWKSet(jwks as { keys: JWK[] }), workflow, service);
  }

  async verify(token: string): Promise<KeyGrant> {
    let claims: z.infer<typeof claimsSchema>;
    try {
      const { payload } = await jwtVerify(token, this.keys, {
        issuer: ISSUER,
        audience: audience(this.workflow, this.service),
        algorithms: [ALG],
        typ: 'tollgate-grant+jwt',
        clockTolerance: 2,
      });
      claims = claimsSchema.parse(payload);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ERR_JWT_EXPIRED') throw invalid('it has expired; a grant is good for a few seconds');
      if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') throw invalid('it was made for another service');
      throw invalid('its signature or its shape is wrong');
    }
    if (this.seen.has(claims.jti)) throw invalid('it was used already; a grant passes once');
    this.seen.set(claims.jti, true);
    const grant: KeyGrant = { id: claims.kid, owner: claims.own, module: claims.mod, roles: claims.roles };
    signed.add(grant);
    return grant;
  }
}
