import { join } from 'node:path';
import type { RequestHandler } from 'express';
import { SignJWT, importJWK, type JWK } from 'jose';
import { ALG, openKeyFile, publicJwk, readKeyFile, type StoredKey } from '../../common/crypto/key-file.js';
import type { OidcConfig } from './oidc.js';

/**
 * The identity provider of standalone mode and tests: an ES256 signing key kept in the state
 * directory, a JWKS the gateway serves at `/.well-known/jwks.json`, and tokens minted by
 * `tollgate token --user <name>`. The gateway verifies these tokens exactly as it verifies a real
 * provider's: through the JWKS URL.
 */
export const LOCAL_ISSUER = 'urn:tollgate:standalone';
export const LOCAL_AUDIENCE = 'tollgate';
export const JWKS_PATH = '/.well-known/jwks.json';
const FILE = 'signing-key.json';

/** The OIDC settings under which a gateway at `baseUrl` accepts locally minted tokens. */
export const localOidcConfig = (baseUrl: string): OidcConfig => ({
  issuer: LOCAL_ISSUER,
  audience: LOCAL_AUDIENCE,
  jwksUrl: new URL(JWKS_PATH, baseUrl).toString(),
});

export class LocalIssuer {
  private constructor(
    private readonly privateJwk: JWK & { kid: string },
    private readonly publicJwk: JWK,
  ) {}

  /**
   * Loads `<stateDir>/signing-key.json`, creating it on first use. Creation is exclusive (link),
   * so a gateway and a CLI starting together end up with the same key.
   */
  static async open(stateDir: string): Promise<LocalIssuer> {
    return LocalIssuer.fromKey(await openKeyFile(join(stateDir, FILE)));
  }

  /**
   * The signing key of `<stateDir>` if a gateway made one, else undefined. Minting (`tollgate
   * token`) uses this, never `open`: a key made beside a gateway that uses another directory's
   * would give tokens that gateway refuses.
   */
  static async existing(stateDir: string): Promise<LocalIssuer | undefined> {
    const key = await readKeyFile(join(stateDir, FILE));
    return key === undefined ? undefined : LocalIssuer.fromKey(key);
  }

  /** Where the signing key of `stateDir` lives. */
  static keyFile(stateDir: string): string {
    return join(stateDir, FILE);
  }

  private static fromKey(stored: StoredKey): LocalIssuer {
    return new LocalIssuer(stored, publicJwk(stored));
  }

  get jwks(): { keys: JWK[] } {
    return { keys: [this.publicJwk] };
  }

  /** A token for `user` (a member of `groups`), valid for `ttlSeconds`. */
  async mint(
    user: string,
    opts: { ttlSeconds?: number; issuer?: string; audience?: string; groups?: readonly string[] } = {},
  ): Promise<string> {
    const key = await importJWK(this.privateJwk, ALG);
    const groups = opts.groups === undefined || opts.groups.length === 0 ? {} : { groups: [...opts.groups] };
    return new SignJWT({ preferred_username: user, ...groups })
      .setProtectedHeader({ alg: ALG, kid: this.privateJwk.kid, typ: 'JWT' })
      .setSubject(user)
      .setIssuer(opts.issuer ?? LOCAL_ISSUER)
      .setAudience(opts.audience ?? LOCAL_AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(`${opts.ttlSeconds ?? 12 * 3600}s`)
      .sign(key);
  }

  /** Serves the JWKS (mount at JWKS_PATH). */
  jwksHandler(): RequestHandler {
    const body = JSON.stringify(this.jwks);
    return (_req, res) => {
      res.set({ 'Content-Type': 'application/json', 'Cache-Control': 'public, max-age=300' }).send(body);
    };
  }
}
