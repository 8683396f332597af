import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { fileURLToPath } from 'node:url';
import { publicJwk, storedKeySchema } from '../../common/crypto/key-file.js';
import { loadEntryTrust, type EntryTrust } from '../../gateway/auth/entry-trust.js';
import type { EntrySealer, EntryVerifier } from '../../common/redis/sealed-entry.js';

/**
 * The signing key of the tests that stand in for the operator (they write the key index and routes
 * themselves): a fixed test key, so every Jest worker and every process a test starts seals and
 * verifies alike. Never used outside the tests.
 */
export const TEST_SIGNING_KEY_FILE = fileURLToPath(new URL('./signing-key.json', import.meta.url));

let trust: Promise<EntryTrust> | undefined;

export function testTrust(): Promise<EntryTrust> {
  trust ??= loadEntryTrust({ grantSigningKeyFile: TEST_SIGNING_KEY_FILE });
  return trust;
}

export async function testSealer(): Promise<EntrySealer> {
  const { sealer } = await testTrust();
  if (sealer === undefined) throw new Error('the test trust has no sealer');
  return sealer;
}

export async function testVerifier(): Promise<EntryVerifier> {
  return (await testTrust()).verifier;
}

/** The public half, as a sidecar is given it (TOLLGATE_TRUSTED_KEYS). */
export const TEST_TRUSTED_KEYS = JSON.stringify({
  keys: [publicJwk(storedKeySchema.parse(JSON.parse(readFileSync(TEST_SIGNING_KEY_FILE, 'utf8'))))],
});

/** The value at `key` as a gateway believes it (opened with the trusted keys, parsed), or undefined. */
export async function readSealed(client: Redis, key: string): Promise<unknown> {
  const raw = await client.get(key);
  return raw === null ? undefined : openSealed(key, raw);
}

/** A sealed value read at `key`, opened and parsed; throws if it does not verify. */
export async function openSealed(key: string, raw: string): Promise<unknown> {
  const opened = (await testVerifier()).open(key, raw);
  if (!opened.ok) throw new Error(`${key}: ${opened.issue}`);
  return JSON.parse(opened.payload);
}
