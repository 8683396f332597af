import type { RequestHandler } from 'express';
import { z } from 'zod';
import {
  importedKeyId,
  importedKeySchema,
  importedKeySpec,
  type ImportedKey,
} from '../../../common/apikey/imported-key.js';
import { isTollgateError, TollgateError } from '../../../common/errors.js';
import { apiKeyId, newApiKey, type ApiKey } from '../../../common/resources/apikey.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import { isApiStatus } from '../../../common/kube/custom-objects.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { indexRebuilding, redisUnavailable } from '../../../common/redis/unavailable.js';
import { callerOf, requireAdmin } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { keyGrantOf } from '../key-grant.js';
import { checkRoles } from '../key-roles.js';
import type { ManagementRoute } from '../route.js';
import { validate } from '../validate.js';
import { apiKeyViewSchema, toApiKeyView } from '../views.js';

export const MAX_IMPORTED_KEYS = 1000;

export const importKeysBodySchema = z
  .strictObject({
    keys: z
      .array(importedKeySchema, { error: 'keys is an array of keys to import' })
      .min(1, 'keys lists at least one key')
      .max(
        MAX_IMPORTED_KEYS,
        `import at most ${MAX_IMPORTED_KEYS} keys a call; send the rest in further calls`,
      ),
  })
  .meta({
    examples: [
      {
        keys: [
          {
            hash: '3f1c2a4b5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081',
            start: 'sk_live_',
            module: 'platform',
            roles: ['viewer'],
            owner: 'alice@example.com',
            name: 'acme reporting (from the old gateway)',
          },
        ],
      },
    ],
  });

const importedSchema = z.object({
  imported: z.array(apiKeyViewSchema).describe('The keys imported by this call, in the order sent'),
  unchanged: z
    .array(z.object({ index: z.int().min(0), id: z.string() }))
    .describe('Keys of the call imported before (the same hash, owner, module and roles): left as they are'),
});

// Fields are named without the row's index (as validate names them); messages name the row.
const at = (field: string): string => `keys.${field}`;

/** Refuses the whole call over one row: the row and field in `field`, nothing written. */
function rowError(err: unknown, i: number): never {
  if (isTollgateError(err)) {
    throw new TollgateError(err.code, `keys[${i}]: ${err.message}`, {
      field: at(err.field ?? 'roles'),
    });
  }
  throw err;
}

/** An earlier import of the same key, which this call leaves as it is; anything else with its hash is refused. */
async function earlier(deps: ManagementDeps, row: ImportedKey, i: number): Promise<ApiKey | undefined> {
  let grant;
  try {
    grant = await deps.findGrant(row.hash);
  } catch (err) {
    throw redisUnavailable(err);
  }
  if (grant === undefined) return undefined;
  const key = await deps.store.find(grant.id);
  const same =
    key !== undefined &&
    key.spec.imported === true &&
    key.spec.owner === row.owner &&
    key.spec.module === row.module &&
    key.spec.roles.join('\n') === row.roles.join('\n');
  if (same) return key;
  throw new TollgateError(
    'key_exists',
    `keys[${i}]: a key with this hash exists already (id ${grant.id}), for another owner or scope; delete it first or leave this key out`,
    { field: at('hash') },
  );
}

/**
 * POST /admin/apikeys/import: administrators bring keys along from another gateway by their
 * SHA-256. Every key is checked before any is written (its fields as a new key's, its owner's
 * right to its roles, a hash no other key has), so a call imports all its keys or none; a key
 * imported before is left as it is, so a call that failed halfway may be sent again. An imported
 * key works at once, and is listed, rolled and revoked as any other.
 */
function adminImportKeys(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const caller = callerOf(res);
    const body = validate(importKeysBodySchema, req.body, 'body');
    // Whether a hash is taken is read from the index: only once the index is known whole (after a
    // Redis restart the operator rebuilds it) does "no entry" mean "no key".
    let built: string | null;
    try {
      built = await deps.redis.get(redisKeys.indexMarker);
    } catch (err) {
      throw redisUnavailable(err);
    }
    if (built === null) throw indexRebuilding();
    const seen = new Map<string, number>();
    const unchanged: Array<{ index: number; id: string }> = [];
    const fresh: Array<{ index: number; row: ImportedKey }> = [];
    for (const [i, row] of body.keys.entries()) {
      const twice = seen.get(row.hash);
      if (twice !== undefined) {
        throw new TollgateError(
          'invalid_field',
          `keys[${i}]: the same hash as keys[${twice}]; list each key once`,
          {
            field: at('hash'),
          },
        );
      }
      seen.set(row.hash, i);
      if (row.expiresAt !== undefined && Date.parse(row.expiresAt) <= Date.now()) {
        throw new TollgateError('expiry_in_past', `keys[${i}]: expiresAt is in the past; leave the key out`, {
          field: at('expiresAt'),
        });
      }
      await checkRoles(deps, row.owner, row, `${row.owner}'s`).catch((err: unknown) => rowError(err, i));
      const offboarded = await deps.offboarded.offboardedAt(row.owner);
      if (offboarded !== undefined) {
        throw new TollgateError(
          'owner_offboarded',
          `keys[${i}]: ${row.owner} was offboarded at ${new Date(offboarded).toISOString()}; their keys are not imported (leave them out)`,
          { field: at('owner') },
        );
      }
      const before = await earlier(deps, row, i);
      if (before === undefined) fresh.push({ index: i, row });
      else unchanged.push({ index: i, id: apiKeyId(before) });
    }
    const imported = [];
    for (const { row } of fresh) {
      const created = await deps.store
        .create(newApiKey(importedKeyId(row.hash), importedKeySpec(row)))
        .catch((err: unknown) => {
          // The same call sent twice at once, or the key's earlier import still being deleted.
          if (isApiStatus(err, 409) || (isTollgateError(err) && err.status === 409)) {
            throw new TollgateError(
              'key_exists',
              `the key with start ${row.start} is being imported or deleted meanwhile; send the call again`,
              { field: 'keys.hash' },
            );
          }
          throw err;
        });
      try {
        await deps.index.put(row.hash, await keyGrantOf(deps, created));
      } catch (e) {
        // Undone, so that sending the call again imports it once (the keys before it stay, unchanged then).
        await deps.store
          .delete(row.owner, apiKeyId(created))
          .catch((undo: unknown) =>
            deps.log.error(
              { err: undo, id: apiKeyId(created) },
              'could not undo an imported ApiKey whose index entry failed',
            ),
          );
        throw e;
      }
      const view = toApiKeyView(created, undefined);
      imported.push(view);
      deps.audit.record({
        action: 'key.created',
        keyId: view.id,
        key: { name: row.name, start: row.start },
        owner: row.owner,
        actor: caller.subject,
        req,
        detail: { imported: 'true' },
      });
    }
    deps.log.info(
      { imported: imported.length, unchanged: unchanged.length, actor: caller.subject },
      'api keys imported',
    );
    res
      .status(200)
      .set({ [AUDIT_HEADER]: await deps.audit.settle() })
      .json({ imported, unchanged });
  };
}

export const adminImportKeysRoute: ManagementRoute = {
  method: 'post',
  path: '/admin/apikeys/import',
  operationId: 'adminImportApiKeys',
  summary: 'Import keys made by another gateway, by their SHA-256 (administrators)',
  body: { schema: importKeysBodySchema, required: true },
  // Up to MAX_IMPORTED_KEYS keys of a few hundred bytes each.
  bodyLimit: '1mb',
  // Only an administrator's body is read at all.
  beforeBody: (deps) => (req, res, next) => {
    requireAdmin(callerOf(res), deps.admin.groupsClaim);
    if (!req.is('application/json')) {
      throw new TollgateError(
        'unsupported_media_type',
        'send the keys as JSON with "Content-Type: application/json"',
      );
    }
    next();
  },
  ok: { status: 200, description: 'The keys imported, and those imported before', schema: importedSchema },
  errors: [400, 401, 403, 409, 413, 415, 503],
  handler: adminImportKeys,
};
