import type { RequestHandler } from 'express';
import { z } from 'zod';
import { generateKey, hashKey, keyStart } from '../../../common/apikey/format.js';
import { TollgateError } from '../../../common/errors.js';
import { identityNameSchema } from '../../../common/resources/identity.js';
import { identityFor } from '../identity-access.js';
import { apiKeyId, newApiKey, newKeyId, type ApiKeySpec } from '../../../common/resources/apikey.js';
import { keyFields } from '../../../common/apikey/key-fields.js';
import { callerOf } from '../../auth/oidc.js';
import { checkRoom } from '../key-room.js';
import { checkRoles } from '../key-roles.js';
import type { ManagementDeps } from '../deps.js';
import { keyGrantOf } from '../key-grant.js';
import { validate } from '../validate.js';
import { toApiKeyView, createdKeySchema } from '../views.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import { revokeKey } from '../revoke.js';
import { keyLinks } from '../key-id.js';
import type { ManagementRoute } from '../route.js';

export const createKeyBodySchema = z
  .strictObject({
    ...keyFields,
    identity: identityNameSchema
      .optional()
      .describe('One of your identities: its limits and credits hold across all its keys'),
  })
  .meta({
    examples: [
      { module: 'platform', roles: ['viewer'], name: 'nightly export' },
      {
        module: 'platform',
        roles: ['viewer'],
        allowedCidrs: ['10.0.0.0/8'],
        rateLimit: { requests: 100, windowSeconds: 60 },
      },
      { module: 'platform', roles: ['models:inference'], models: ['model-iris', 'model-fraud-*'] },
      { module: 'platform', roles: ['viewer'], name: 'acme: reporting', identity: 'acme-corp' },
      {
        module: 'platform',
        roles: ['viewer'],
        limits: [
          { name: 'burst', requests: 10, windowSeconds: 1 },
          { name: 'per-day', requests: 10000, windowSeconds: 86400 },
        ],
      },
    ],
  });

/** POST /apikeys: creates a key; the answer carries the key value, the only time it is ever sent. */
function createKey(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    if (!req.is('application/json')) {
      throw new TollgateError(
        'unsupported_media_type',
        'send the new key as JSON with "Content-Type: application/json"',
      );
    }
    const body = validate(createKeyBodySchema, req.body, 'body');
    const caller = callerOf(res);
    const owner = caller.subject;
    await checkRoles(deps, owner, body);
    await checkRoom(deps, caller);
    // Only its owner adds keys to an identity (another user's is "not found", as if none existed).
    const identity =
      body.identity === undefined
        ? undefined
        : await identityFor(deps, caller, body.identity, { admin: false, field: 'identity' });
    if (body.expiresAt !== undefined && Date.parse(body.expiresAt) <= Date.now()) {
      throw new TollgateError(
        'expiry_in_past',
        'expiresAt is in the past; choose a later time, or leave it out',
        {
          field: 'expiresAt',
        },
      );
    }

    const key = generateKey(body.module);
    const spec: ApiKeySpec = {
      hash: hashKey(key),
      start: keyStart(key),
      module: body.module,
      roles: body.roles,
      owner,
    };
    if (caller.name !== undefined) spec.ownerName = caller.name;
    if (body.name !== undefined) spec.name = body.name;
    // Normalised to UTC so the CRD, the index and the listing all carry the same string.
    if (body.expiresAt !== undefined) spec.expiresAt = new Date(body.expiresAt).toISOString();
    if (body.rateLimit !== undefined) spec.rateLimit = body.rateLimit;
    if (body.limits !== undefined) spec.limits = body.limits;
    if (body.credits !== undefined) spec.credits = body.credits;
    if (body.allowedCidrs !== undefined) spec.allowedCidrs = body.allowedCidrs;
    if (body.models !== undefined) spec.models = body.models;
    if (body.identity !== undefined) spec.identity = body.identity;

    const created = await deps.store.create(newApiKey(newKeyId(), spec));
    try {
      await deps.index.put(spec.hash, await keyGrantOf(deps, created, identity));
    } catch (e) {
      // The key was never shown, so undoing the resource loses nothing; keeping it would make the
      // operator index a key nobody holds.
      await deps.store
        .delete(owner, apiKeyId(created))
        .catch((undo: unknown) =>
          deps.log.error(
            { err: undo, id: apiKeyId(created) },
            'could not undo an ApiKey whose index entry failed',
          ),
        );
      throw e;
    }
    // Only now, the key being whole (resource and entry): an offboarding that began while this
    // call ran either lists it after this point and revokes it, or is seen here, and the key is
    // undone. It never outlives its owner's offboarding.
    try {
      await deps.offboarded.check(caller);
    } catch (e) {
      await revokeKey(deps, created, {
        actor: owner,
        req,
        reason: 'made while its owner was offboarded',
      }).catch((undo: unknown) =>
        deps.log.error(
          { err: undo, id: apiKeyId(created) },
          'could not undo a key made during an offboarding',
        ),
      );
      throw e;
    }
    const view = toApiKeyView(created, undefined);
    deps.log.info({ id: view.id, owner, module: view.module, roles: view.roles }, 'api key created');
    deps.audit.record({
      action: 'key.created',
      keyId: view.id,
      identity: spec.identity,
      key: { name: spec.name, start: spec.start },
      owner,
      actor: owner,
      req,
    });
    res
      .status(201)
      .set({
        Location: `${req.baseUrl}/apikeys/${view.id}`,
        'Cache-Control': 'no-store',
        [AUDIT_HEADER]: await deps.audit.settle(),
      })
      .json({ ...view, key });
  };
}

export const createKeyRoute: ManagementRoute = {
  method: 'post',
  path: '/apikeys',
  operationId: 'createApiKey',
  summary: 'Create a key; the answer holds the key, the only time it is sent',
  body: { schema: createKeyBodySchema, required: true },
  ok: { status: 201, description: 'The new key', schema: createdKeySchema, links: keyLinks },
  errors: [400, 401, 404, 409, 413, 415, 503],
  handler: createKey,
};
