import { z } from 'zod';
import { TollgateError } from '../../common/errors.js';
import { KEY_ID_PATTERN } from '../../common/resources/apikey.js';
import { validate } from './validate.js';

export const keyIdParamsSchema = z.object({
  id: z
    .string()
    .regex(KEY_ID_PATTERN, 'a key id is 20 lowercase hexadecimal characters, as listed by GET /apikeys'),
});

/** The `{id}` of `/apikeys/{id}`, checked. */
export const keyIdParam = (params: unknown): string => validate(keyIdParamsSchema, params, 'path').id;

/** Another user's key is reported exactly like a key that does not exist, so ids do not leak. */
export const keyNotFound = (id: string): TollgateError =>
  new TollgateError('key_not_found', `you have no API key with id ${id}; GET /api/v1/apikeys lists yours`);

/** Administrators' routes: a key no user has. */
export const noKeyOfAnyone = (id: string): TollgateError =>
  new TollgateError(
    'key_not_found',
    `no user has an API key with id ${id}; GET /api/v1/admin/apikeys lists them`,
  );

/** What a new key's id leads to (OpenAPI links; a fuzzer follows them with real ids). */
export const keyLinks: Record<string, unknown> = Object.fromEntries(
  ['getApiKey', 'getApiKeyUsage', 'rollApiKey', 'deleteApiKey'].map((operationId) => [
    operationId,
    { operationId, parameters: { id: '$response.body#/id' } },
  ]),
);
