import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import { z } from 'zod';

/** An ES256 private key as a JWK with its thumbprint as `kid`, kept in a file of its own (0600). */
export const ALG = 'ES256';

export const storedKeySchema = z.object({
  kty: z.literal('EC'),
  crv: z.literal('P-256'),
  d: z.string(),
  x: z.string(),
  y: z.string(),
  kid: z.string(),
});
export type StoredKey = z.infer<typeof storedKeySchema>;

/** The key in `file`, or undefined if there is none. */
export async function readKeyFile(file: string): Promise<StoredKey | undefined> {
  try {
    return storedKeySchema.parse(JSON.parse(await readFile(file, 'utf8')));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/**
 * The key in `file`, made on first use. Creation is exclusive (link), so two processes starting
 * together end up with the same key.
 */
export async function openKeyFile(file: string): Promise<StoredKey> {
  const found = await readKeyFile(file);
  if (found !== undefined) return found;
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temp, JSON.stringify(await generateStoredKey()), { mode: 0o600 });
  try {
    await link(temp, file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    await unlink(temp);
  }
  return storedKeySchema.parse(JSON.parse(await readFile(file, 'utf8')));
}

/** A new key, with its thumbprint as `kid`. */
export async function generateStoredKey(): Promise<StoredKey> {
  const { privateKey } = await generateKeyPair(ALG, { extractable: true });
  const jwk = await exportJWK(privateKey);
  return storedKeySchema.parse({ ...jwk, kid: await calculateJwkThumbprint(jwk) });
}

/** The public half, for a JWKS. */
export function publicJwk(key: StoredKey): JWK {
  const { d: _d, ...pub } = key;
  return { ...pub, alg: ALG, use: 'sig' };
}
