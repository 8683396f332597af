import {
  hkdfSync,
  createPrivateKey,
  createPublicKey,
  sign,
  verify,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';
import type { JWK } from 'jose';
import { z } from 'zod';
import { publicJwk, type StoredKey } from '../crypto/key-file.js';

/**
 * Redis is a cache of the operator's decisions, reachable by more parties than the operator: an
 * entry is believed only if it proves it came from the holder of the signing key (the operator and
 * the central gateways, both in Tollgate's own namespace). Each key index entry and route is stored
 * sealed:
 *
 *   tg1.<kid>.<signature>.<payload JSON>
 *
 * The signature (ES256, P-1363, base64url) covers the Redis key and the payload, so a sealed value
 * moved to another key (another key hash, another workflow's route) no longer verifies. Readers hold
 * only the public half (`TrustedKeys`): a sidecar, whose pod a tenant controls, can verify entries
 * but never make one.
 *
 * What sealing does not stop (docs/install.md, "What Tollgate guarantees a tenant"): a writer can still
 * delete entries (a denial of service, never a grant) or put back an entry the operator once wrote
 * for the same Redis key (a revoked key's old entry). Both need write access to Redis, which the
 * chart's ACL users give to the operator and the central gateways alone.
 */
export const SEAL_PREFIX = 'tg1.';

/** The public keys entries are verified with: a JWKS of EC P-256 keys, each with its `kid`. */
export const trustedKeysSchema = z.object({
  keys: z
    .array(
      z.looseObject({
        kty: z.literal('EC'),
        crv: z.literal('P-256'),
        x: z.string().min(1),
        y: z.string().min(1),
        kid: z.string().regex(/^[A-Za-z0-9_-]+$/, 'a kid is base64url (a JWK thumbprint)'),
        d: z.never({ error: 'a trusted key is a public key: leave out its private part (d)' }).optional(),
      }),
    )
    .min(1, 'at least one public key'),
});
export type TrustedKeys = z.infer<typeof trustedKeysSchema>;

const SIGNATURE = { dsaEncoding: 'ieee-p1363' } as const;

const signedBytes = (redisKey: string, payload: string): Buffer => Buffer.from(`${redisKey}\n${payload}`);

/** Seals entries with the signing key; only the operator and the central gateways hold one. */
export class EntrySealer {
  private readonly key: KeyObject;
  readonly kid: string;

  constructor(stored: StoredKey) {
    this.key = createPrivateKey({ key: stored, format: 'jwk' });
    this.kid = stored.kid;
  }

  /**
   * A secret of its own for `purpose` (HKDF over the private key): what the holders of the signing
   * key can all make again, so such a secret is never stored (a webhook's signing secret).
   */
  deriveSecret(purpose: string): Buffer {
    const d = this.key.export({ format: 'jwk' }).d ?? '';
    return Buffer.from(hkdfSync('sha256', Buffer.from(d, 'base64url'), 'tollgate', purpose, 32));
  }

  /**
   * Signed on libuv's thread pool: a rebuild seals 100,000 entries, and the signatures then run on
   * every core while the event loop writes the batches already sealed.
   */
  seal(redisKey: string, payload: string): Promise<string> {
    return new Promise((resolve, reject) =>
      sign('sha256', signedBytes(redisKey, payload), { key: this.key, ...SIGNATURE }, (err, signature) =>
        err
          ? reject(err)
          : resolve(`${SEAL_PREFIX}${this.kid}.${signature.toString('base64url')}.${payload}`),
      ),
    );
  }
}

/**
 * The seal of a sealed value (`<kid>.<signature>`), without its payload: what a writer keeps to
 * write the same entry again, unsigned, after Redis lost it (100,000 keys: 13 MB, not 45).
 */
export function sealOf(sealed: string): string {
  const sigEnd = sealed.indexOf('.', sealed.indexOf('.', SEAL_PREFIX.length) + 1);
  // A copy, not a slice: V8's slice of a long string points into it and keeps the whole sealed
  // value (payload included) alive for as long as the seal is kept.
  return Buffer.from(sealed.slice(SEAL_PREFIX.length, sigEnd), 'latin1').toString('latin1');
}

/** A sealed value from a kept seal and the payload it was made for. */
export const withSeal = (seal: string, payload: string): string => `${SEAL_PREFIX}${seal}.${payload}`;

export type Opened = { ok: true; payload: string } | { ok: false; issue: string };

/** Opens sealed entries with the public keys alone. */
export class EntryVerifier {
  private readonly keys: Map<string, KeyObject>;

  constructor(readonly trusted: TrustedKeys) {
    this.keys = new Map(
      trusted.keys.map((jwk) => [jwk.kid, createPublicKey({ key: jwk as JsonWebKeyLike, format: 'jwk' })]),
    );
  }

  /** The verifier of the entries `stored` seals (the signer's own view). */
  static forKey(stored: StoredKey): EntryVerifier {
    return new EntryVerifier({ keys: [publicJwk(stored) as TrustedKeys['keys'][number]] });
  }

  /** The payload of `raw` stored at `redisKey`, or why it must not be believed. */
  open(redisKey: string, raw: string): Opened {
    const parts = sealedParts(raw);
    if (parts === undefined) return { ok: false, issue: 'not sealed' };
    const key = this.keys.get(parts.kid);
    if (key === undefined) return { ok: false, issue: 'sealed with a key this process does not trust' };
    const { payload } = parts;
    const signature = Buffer.from(parts.signature, 'base64url');
    const valid = verify('sha256', signedBytes(redisKey, payload), { key, ...SIGNATURE }, signature);
    return valid ? { ok: true, payload } : { ok: false, issue: 'bad signature' };
  }
}

/**
 * A sealed value's parts, not verified: for a writer looking for its own entries, which a write
 * then checks again (never to believe what one says).
 */
export function sealedParts(raw: string): { kid: string; signature: string; payload: string } | undefined {
  if (!raw.startsWith(SEAL_PREFIX)) return undefined;
  const kidEnd = raw.indexOf('.', SEAL_PREFIX.length);
  const sigEnd = kidEnd < 0 ? -1 : raw.indexOf('.', kidEnd + 1);
  if (sigEnd < 0) return undefined;
  return {
    kid: raw.slice(SEAL_PREFIX.length, kidEnd),
    signature: raw.slice(kidEnd + 1, sigEnd),
    payload: raw.slice(sigEnd + 1),
  };
}

type JsonWebKeyLike = JWK & JsonWebKey;

/** The JWKS given as JSON text (a flag, an environment variable), checked. */
export function parseTrustedKeys(text: string): TrustedKeys {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error('the trusted keys are not JSON: give the JWKS the operator publishes ({"keys":[...]})');
  }
  const parsed = trustedKeysSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `the trusted keys are not a JWKS of EC P-256 public keys: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`,
    );
  }
  return parsed.data;
}
