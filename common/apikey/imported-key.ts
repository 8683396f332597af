import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ApiKeySpec } from '../resources/apikey.js';
import { keyFields } from './key-fields.js';

/**
 * One key brought along from another gateway (Unkey's migrateKeys, Kong's key-auth credentials, an
 * earlier Tollgate): its SHA-256, the characters shown for it, whom it belongs to, and what it may
 * do, with the same fields as a new key. Its value is never sent: nothing here could call.
 */
export const importedKeySchema = z.strictObject({
  hash: z
    .string({ error: 'hash is the SHA-256 of the key, 64 hexadecimal characters' })
    .regex(/^[0-9a-fA-F]{64}$/, 'hash is the SHA-256 of the key, 64 hexadecimal characters')
    .transform((h) => h.toLowerCase()),
  start: z
    .string({ error: 'start is the first characters of the key, shown in listings' })
    .regex(
      /^[0-9A-Za-z_.:+/=-]{1,8}$/,
      'start is the first characters of the key (1 to 8 letters, digits or _.:+/=-), never more',
    ),
  owner: z
    .string({ error: 'owner is the subject of the user the key belongs to' })
    .min(1, 'owner cannot be empty')
    .max(255, 'owner is at most 255 characters'),
  ownerName: z.string().max(100, 'ownerName is at most 100 characters').optional(),
  ...keyFields,
});
export type ImportedKey = z.output<typeof importedKeySchema>;

/**
 * An imported key's id, from its hash: importing a key again (a call sent twice, a manifest applied
 * twice) names the same ApiKey, never a second one with the same hash. A hash of the hash: it
 * tells nothing of the key.
 */
export const importedKeyId = (hash: string): string =>
  createHash('sha256').update(`tollgate-imported-key:${hash}`).digest('hex').slice(0, 20);

/** The ApiKey spec of an imported key: marked imported, so its start need not be Tollgate's prefix. */
export function importedKeySpec(row: ImportedKey): ApiKeySpec {
  const spec: ApiKeySpec = {
    hash: row.hash,
    start: row.start,
    imported: true,
    module: row.module,
    roles: row.roles,
    owner: row.owner,
  };
  if (row.ownerName !== undefined) spec.ownerName = row.ownerName;
  if (row.name !== undefined) spec.name = row.name;
  if (row.expiresAt !== undefined) spec.expiresAt = new Date(row.expiresAt).toISOString();
  if (row.rateLimit !== undefined) spec.rateLimit = row.rateLimit;
  if (row.limits !== undefined) spec.limits = row.limits;
  if (row.credits !== undefined) spec.credits = row.credits;
  if (row.allowedCidrs !== undefined) spec.allowedCidrs = row.allowedCidrs;
  if (row.models !== undefined) spec.models = row.models;
  return spec;
}
