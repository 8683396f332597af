import type { RequestHandler } from 'express';
import { z } from 'zod';
import { generateKey, hashKey, keyStart } from '../../../common/apikey/format.js';
import { TollgateError } from '../../../common/errors.js';
import { identityNameSchema } from '../../../common/resources/identity.js';
import { identityFor } from '../identity-access.js';
import {
  apiKeyId,
  newApiKey,
  newKeyId,
  creditsInputSchema,
  namedLimitsInputSchema,
  rateLimitSchema,
  type ApiKeySpec,
} from '../../../common/resources/apikey.js';
import { isCidr } from '../../../common/net/cidr.js';
import { MODEL_SCOPE_MAX, MODEL_SCOPE_PATTERN } from '../../../common/apikey/model-scope.js';
import { callerOf } from '../../auth/oidc.js';
import { checkRoom } from '../key-room.js';
import type { ManagementDeps } from '../deps.js';
import { keyGrantOf } from '../key-grant.js';
import { validate } from '../validate.js';
import { toApiKeyView, createdKeySchema } from '../views.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import { revokeKey } from '../revoke.js';
import { keyLinks } from '../key-id.js';
import type { ManagementRoute } from '../route.js';

// Printable text only: a name is shown in the panel and in `kubectl get`.
const PRINTABLE = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u;

export const createKeyBodySchema = z
  .strictObject({
    module: z.enum(['bda', 'platform'], { error: 'module must be "bda" or "platform"' }),
    roles: z
      .array(
        z
          .string({ error: 'each role is a string' })
          .min(1, 'a role cannot be empty')
          .max(128, 'a role is at most 128 characters'),
        {
          error: 'roles must be an array of role names, e.g. ["viewer"]',
        },
      )
      .min(1, 'choose at least one role')
      .max(32, 'a key has at most 32 roles'),
    name: z
      .string({ error: 'name must be a string' })
      .trim()
      .min(1, 'name cannot be blank; leave it out for an unnamed key')
      .max(100, 'name is at most 100 characters')
      .regex(PRINTABLE, 'name cannot hold control characters')
      .optional(),
    expiresAt: z.iso
      .datetime({
        offset: true,
        error: 'expiresAt must be an ISO 8601 date-time with a time zone, e.g. 2030-01-31T23:59:59Z',
      })
      // Kept in UTC: 9999-12-31T23:59-12:00 is in year 10000 there, which no store takes.
      .refine((v) => new Date(v).getUTCFullYear() <= 9999, 'expiresAt must fall before the year 10000 in UTC')
      .optional(),
    rateLimit: rateLimitSchema.optional(),
    limits: namedLimitsInputSchema.optional(),
    credits: creditsInputSchema.optional(),
    allowedCidrs: z
      .array(
        z
          .string({ error: 'each allowedCidrs entry is a string' })
          .max(49, 'a CIDR is at most 49 characters')
          .refine(isCidr, 'each allowedCidrs entry must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32'),
        { error: 'allowedCidrs must be an array of CIDRs, e.g. ["10.0.0.0/8"]' },
      )
      .min(1, 'allowedCidrs lists at least one network; leave it out to allow any')
      .max(32, 'a key has at most 32 allowedCidrs')
      .refine((l) => new Set(l).size === l.length, 'allowedCidrs lists a network twice; list each once')
      .optional(),
    models: z
      .array(
        z
          .string({ error: 'each models entry is a string' })
          .max(63, 'a models entry is at most 63 characters')
          .regex(
            new RegExp(MODEL_SCOPE_PATTERN),
            'each models entry is a model name or a pattern with *, e.g. model-iris or model-fraud-*',
          ),
        { error: 'models must be an array of model names or patterns, e.g. ["model-iris"]' },
      )
      .min(1, 'models lists at least one model; leave it out to allow every model the roles allow')
      .max(MODEL_SCOPE_MAX, `a key has at most ${MODEL_SCOPE_MAX} models entries`)
      .refine((l) => new Set(l).size === l.length, 'models lists an entry twice; list each once')
      .optional(),
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
type CreateKeyBody = z.output<typeof createKeyBodySchema>;

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

async function checkRoles(deps: ManagementDeps, owner: string, body: CreateKeyBody): Promise<void> {
  const duplicate = body.roles.find((r, i) => body.roles.indexOf(r) !== i);
  if (duplicate !== undefined) {
    throw new TollgateError('invalid_field', `roles: "${duplicate}" is listed twice; list each role once`, {
      field: 'roles',
    });
  }
  if (body.module === 'bda') {
    if (body.models !== undefined) {
      throw new TollgateError(
        'invalid_field',
        "models: only a platform key is limited to models; a bda key calls its own workflow's models only",
        { field: 'models' },
      );
    }
    const [workflow] = body.roles;
    if (body.roles.length !== 1 || workflow === undefined) {
      throw new TollgateError(
        'invalid_field',
        'roles: a bda key has exactly one role, the id of the workflow it calls',
        {
          field: 'roles',
        },
      );
    }
    const owned = await deps.workflows.ownedBy(owner);
    if (!owned.some((w) => w.workflow === workflow)) {
      throw new TollgateError(
        'unknown_workflow',
        `roles: "${workflow}" is not a workflow of yours; GET /api/v1/modules lists the workflows you can choose`,
        { field: 'roles' },
      );
    }
    return;
  }
  const unknown = body.roles.find((r) => !deps.roles.has(r));
  if (unknown !== undefined) {
    throw new TollgateError(
      'unknown_role',
      `roles: "${unknown}" is not a platform role; GET /api/v1/modules lists the roles you can choose`,
      { field: 'roles' },
    );
  }
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
