import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { RequestHandler } from 'express';
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { z } from 'zod';
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
const ALG = 'ES256';
const FILE = 'signing-key.json';

/** The OIDC settings under which a gateway at `baseUrl` accepts locally minted tokens. */
export const localOidcConfig = (baseUrl: string): OidcConfig => ({
  issuer: LOCAL_ISSUER,
  audience: LOCAL_AUDIENCE,
  jwksUrl: new URL(JWKS_PATH, baseUrl).toString(),
});

const storedKeySchema = z.object({
  kty: z.literal('EC'),
  crv: z.literal('P-256'),
  d: z.string(),
  x: z.string(),
  y: z.string(),
  kid: z.string(),
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
    const file = join(stateDir, FILE);
    const found = await LocalIssuer.existing(stateDir);
    if (found !== undefined) return found;
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
    const { privateKey } = await generateKeyPair(ALG, { extractable: true });
    const jwk = await exportJWK(privateKey);
    const kid = await calculateJwkThumbprint(jwk);
    const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(temp, JSON.stringify({ ...jwk, kid }), { mode: 0o600 });
    try {
      await link(temp, file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      await unlink(temp);
    }
    return LocalIssuer.fromJwk(JSON.parse(await readFile(file, 'utf8')));
  }

  /**
   * The signing key of `<stateDir>` if a gateway made one, else undefined. Minting (`tollgate
   * token`) uses this, never `open`: a key made beside a gateway that uses another directory's
   * would give tokens that gateway refuses.
   */
  static async existing(stateDir: string): Promise<LocalIssuer | undefined> {
    try {
      return LocalIssuer.fromJwk(JSON.parse(await readFile(join(stateDir, FILE), 'utf8')));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  /** Where the signing key of `stateDir` lives. */
  static keyFile(stateDir: string): string {
    return join(stateDir, FILE);
  }

  private static fromJwk(value: unknown): LocalIssuer {
    const stored = storedKeySchema.parse(value);
    const { d: _d, ...publicJwk } = stored;
    return new LocalIssuer(stored, { ...publicJwk, alg: ALG, use: 'sig' });
  }

  get jwks(): { keys: JWK[] } {
    return { keys: [this.publicJwk] };
  }

  /** A token for `user`, valid for `ttlSeconds`. */
  async mint(
    user: string,
    opts: { ttlSeconds?: number; issuer?: string; audience?: string } = {},
  ): Promise<string> {
    const key = await importJWK(this.privateJwk, ALG);
    return new SignJWT({ preferred_username: user })
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
