import type { Request, RequestHandler } from 'express';
import { z } from 'zod';
import { generateKey, hashKey, keyStart } from '../../../common/apikey/format.js';
import { isTollgateError, TollgateError } from '../../../common/errors.js';
import {
  apiKeyId,
  newApiKey,
  newKeyId,
  stopsAt,
  type ApiKey,
  type ApiKeySpec,
} from '../../../common/resources/apikey.js';
import { callerOf } from '../../auth/oidc.js';
import type { ManagementDeps } from '../deps.js';
import { keyGrantOf } from '../key-grant.js';
import { validate } from '../validate.js';
import { toApiKeyView, rolledKeySchema } from '../views.js';
import { keyIdParam, keyNotFound, keyIdParamsSchema, keyLinks } from '../key-id.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import type { ManagementRoute } from '../route.js';
import { checkRoom } from '../key-room.js';

/** Without a choice, the old key works one more day (or the gateway's maximum, if shorter). */
export const DEFAULT_ROLL_GRACE_SECONDS = 86_400;

export const rollKeyBodySchema = (maxGrace: number) =>
  z.strictObject({
    gracePeriodSeconds: z
      .int({ error: 'gracePeriodSeconds must be a whole number of seconds' })
      .min(0, 'gracePeriodSeconds cannot be negative; 0 stops the old key now')
      .max(
        maxGrace,
        `gracePeriodSeconds is at most ${maxGrace} on this gateway (its maxRollGraceSeconds setting)`,
      )
      .optional(),
  });

/**
 * POST /apikeys/{id}/roll: a new key with the old one's module, roles, name, limits, networks and
 * expiry; the old key keeps working until its grace period ends, then is refused on every replica
 * (its index entry's expiry moves to the end of the grace, and the change is published).
 *
 * The order makes every failure safe: the new key exists before the old one is marked, the mark is
 * a conditional write (two rolls of one key: the second is refused and undone), and only then is
 * the old key's index entry shortened.
 */
function rollKey(deps: ManagementDeps): RequestHandler {
  return async (req, res) => {
    const id = keyIdParam(req.params);
    const caller = callerOf(res);
    const owner = caller.subject;
    const body = readBody(req, deps.maxRollGraceSeconds);
    const old = await deps.store.get(owner, id);
    if (old === undefined) throw keyNotFound(id);
    refuseRolled(old);
    // The old key stays (through its grace period, and as a record after it): a roll adds one.
    await checkRoom(deps, caller);
    const [workflow] = old.spec.roles;
    if (old.spec.module === 'bda' && workflow && (await deps.workflows.ownedByAnother(workflow, owner))) {
      throw new TollgateError(
        'workflow_not_owned',
        `workflow "${workflow}" now belongs to another owner: this key no longer calls it and cannot be rolled; delete it`,
      );
    }

    const now = Date.now();
    const graceSeconds =
      body.gracePeriodSeconds ?? Math.min(DEFAULT_ROLL_GRACE_SECONDS, deps.maxRollGraceSeconds);
    const key = generateKey(old.spec.module);
    // A Tollgate key replaces an imported one: its format is Tollgate's own.
    const {
      hash: _hash,
      start: _start,
      imported: _imported,
      rolled: _rolled,
      rolledFrom: _from,
      ...kept
    } = old.spec;
    // The new key counts as the chain's first key: its limits and credits go on, not start again.
    const spec: ApiKeySpec = {
      ...kept,
      hash: hashKey(key),
      start: keyStart(key),
      rolledFrom: id,
      countsAs: old.spec.countsAs ?? id,
    };
    const created = await deps.store.create(newApiKey(newKeyId(), spec));
    const newId = apiKeyId(created);

    const rolled = {
      to: newId,
      at: new Date(now).toISOString(),
      graceEndsAt: new Date(now + graceSeconds * 1000).toISOString(),
    };
    let marked: ApiKey;
    try {
      await deps.index.put(spec.hash, await keyGrantOf(deps, created));
      // As for a new key, once it is whole: a roll racing its owner's offboarding is undone.
      await deps.offboarded.check(callerOf(res));
      marked = await markRolled(deps, old, rolled);
    } catch (e) {
      // The new key was never shown: undo it, so no key exists that nobody holds.
      await undo(deps, created);
      throw e;
    }
    // Past this point the roll has happened and the new key must reach the caller: a failure to
    // shorten the old key's index entry now is repaired by the operator, which reconciles the
    // changed resource into the same entry.
    await deps.index
      .put(marked.spec.hash, await keyGrantOf(deps, marked))
      .catch((err: unknown) =>
        deps.log.warn({ err, id }, 'rolled key: index entry not shortened now; the operator will'),
      );

    deps.log.info({ id: newId, rolledFrom: id, owner, graceSeconds }, 'api key rolled');
    deps.audit.record({
      action: 'key.rolled',
      keyId: id,
      key: { name: old.spec.name, start: old.spec.start },
      owner,
      actor: owner,
      req,
      detail: { to: newId, graceEndsAt: marked.spec.rolled?.graceEndsAt ?? '' },
    });
    deps.audit.record({
      action: 'key.created',
      keyId: newId,
      key: { name: spec.name, start: spec.start },
      owner,
      actor: owner,
      req,
      detail: { rolledFrom: id },
    });
    res
      .status(201)
      .set({
        Location: `${req.baseUrl}/apikeys/${newId}`,
        'Cache-Control': 'no-store',
        [AUDIT_HEADER]: await deps.audit.settle(),
      })
      .json({ ...toApiKeyView(created, undefined), key, rolled: toApiKeyView(marked, undefined) });
  };
}

/** Attempts at the conditional write before giving up with key_changed. */
const MARK_ATTEMPTS = 5;

/**
 * Sets `spec.rolled` on the old key with a conditional write. Something else may write the key
 * meanwhile (the operator adds its finalizer to a new key, status updates): then the key is read
 * again and, unless it was rolled by someone else (refused), written again.
 */
async function markRolled(
  deps: ManagementDeps,
  old: ApiKey,
  rolled: NonNullable<ApiKeySpec['rolled']>,
): Promise<ApiKey> {
  let current = old;
  for (let attempt = 1; ; attempt++) {
    try {
      return await deps.store.update({ ...current, spec: { ...current.spec, rolled } });
    } catch (e) {
      if (!isTollgateError(e) || e.code !== 'key_changed' || attempt >= MARK_ATTEMPTS) throw e;
      const again = await deps.store.get(old.spec.owner, apiKeyId(old));
      if (again === undefined) throw e;
      refuseRolled(again);
      current = again;
    }
  }
}

function readBody(req: Request, maxGrace: number): z.output<ReturnType<typeof rollKeyBodySchema>> {
  const hasBody =
    Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  // No body at all is a roll with the default grace.
  if (!hasBody) return {};
  if (!req.is('application/json')) {
    throw new TollgateError(
      'unsupported_media_type',
      'send the roll options as JSON with "Content-Type: application/json", or send no body',
    );
  }
  return validate(rollKeyBodySchema(maxGrace), req.body, 'body');
}

function refuseRolled(key: ApiKey): void {
  const id = apiKeyId(key);
  if (key.spec.rolled !== undefined) {
    throw new TollgateError(
      'key_already_rolled',
      `API key ${id} was already rolled to ${key.spec.rolled.to}; roll that key instead`,
    );
  }
  const ends = stopsAt(key.spec);
  if (ends !== undefined && Date.parse(ends) <= Date.now()) {
    throw new TollgateError(
      'key_expired',
      `API key ${id} expired at ${ends}; an expired key cannot be rolled, create a new one`,
    );
  }
}

async function undo(deps: ManagementDeps, created: ApiKey): Promise<void> {
  const id = apiKeyId(created);
  try {
    await deps.index.delete({ hash: created.spec.hash, id });
    await deps.store.delete(created.spec.owner, id);
  } catch (err) {
    deps.log.error({ err, id }, 'could not undo the new key of a failed roll');
  }
}

export const rollKeyRoute: ManagementRoute = {
  method: 'post',
  path: '/apikeys/{id}/roll',
  operationId: 'rollApiKey',
  summary: 'A new key with the same grant; the old one works until its grace period ends',
  pathParams: keyIdParamsSchema,
  body: ({ maxRollGraceSeconds }) => ({ schema: rollKeyBodySchema(maxRollGraceSeconds), required: false }),
  ok: {
    status: 201,
    description: 'The new key, and the old one as it now is',
    schema: rolledKeySchema,
    links: keyLinks,
  },
  errors: [400, 401, 404, 409, 413, 415, 503],
  handler: rollKey,
};
