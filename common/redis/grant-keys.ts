import type { Redis } from 'ioredis';
import type { JWK } from 'jose';
import { z } from 'zod';
import { redisKeys } from './schema.js';

/**
 * The public keys sidecars verify the central gateways' grants with, as a JWKS. The operator
 * publishes them (derived from the signing key it keeps in a Secret, or in standalone mode a key
 * file), so a sidecar in any namespace finds them where it already looks keys up.
 */
export interface GrantJwks {
  keys: JWK[];
}

const jwksSchema = z.object({
  keys: z.array(z.looseObject({ kty: z.string(), kid: z.string() })).min(1),
});

/** The published keys, or undefined when none are (yet). */
export async function readGrantKeys(redis: Redis): Promise<GrantJwks | undefined> {
  const raw = await redis.get(redisKeys.grantKeys);
  if (raw === null) return undefined;
  try {
    const parsed = jwksSchema.safeParse(JSON.parse(raw));
    return parsed.success ? (parsed.data as GrantJwks) : undefined;
  } catch {
    return undefined;
  }
}

export async function writeGrantKeys(redis: Redis, jwks: GrantJwks): Promise<void> {
  await redis.set(redisKeys.grantKeys, JSON.stringify(jwks));
}
