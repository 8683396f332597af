import { z } from 'zod';
import { V2_DATATYPES } from '../../common/model-settings/types.js';
import { modelMetadataSchema } from '../v2/metadata.js';
import { createKeyBodySchema } from './routes/create-key.js';
import { keyIdParamsSchema } from './routes/key-id.js';
import { auditPageSchema, auditQuerySchema } from './routes/list-audit.js';
import { listKeysQuerySchema } from './routes/list-keys.js';
import { adminListKeysQuerySchema } from './routes/admin-list-keys.js';
import { offboardBodySchema } from './routes/offboard.js';
import { rollKeyBodySchema } from './routes/roll-key.js';
import {
  apiKeyViewSchema,
  callerSchema,
  createdKeySchema,
  errorSchema,
  keyPageSchema,
  keyUsageSchema,
  modelPageSchema,
  modulesSchema,
  offboardResultSchema,
  ownedKeyPageSchema,
  rolledKeySchema,
} from './views.js';

/**
 * The OpenAPI 3.1 document of Tollgate's HTTP surface, generated from the zod schemas the handlers
 * validate with and answer in (views.ts, routes/*): the management API in full; of `/events` and
 * `/v2`, what Tollgate itself decides (its checks and its errors; the bodies are the upstream's).
 */
type Schema = Record<string, unknown>;
type Security = 'bearer' | 'apikey' | 'none';

interface Operation {
  method: 'get' | 'post' | 'delete';
  path: string;
  operationId: string;
  summary: string;
  security: Security;
  pathParams?: z.ZodObject;
  query?: z.ZodObject;
  /** A zod schema the handler validates with, or (V2 infer, checked by hand for speed) its shape. */
  body?: { schema: z.ZodType | Schema; required: boolean };
  ok: { status: number; description: string; schema?: z.ZodType | Schema; links?: Schema };
  /** Error statuses this operation can answer, each with the Error body. */
  errors: number[];
}

const ERROR_TEXT: Record<number, string> = {
  400: 'The request is invalid: `field` names what to fix',
  401: 'Missing, malformed, unknown or expired credentials',
  403: 'The credentials do not allow this (admin routes: not an administrator)',
  404: 'Not found (another user’s key is not found either)',
  405: 'Method not allowed here (see Allow)',
  409: 'The key changed meanwhile, was already rolled, or has expired',
  413: 'The body is larger than the gateway accepts',
  415: 'The body is not JSON',
  429: 'The key’s rate limit is spent (see Retry-After)',
  502: 'The upstream failed',
  503: 'A store the gateway needs is unavailable; retry',
  504: 'The upstream did not answer in time',
};

/**
 * JSON Schema (2020-12, as OpenAPI 3.1 takes it) of a zod schema. Patterns in Unicode property
 * syntax (`\p{...}`) are dropped: many JSON Schema tools' regex engines cannot read them, and the
 * server checks them anyway.
 */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Schema {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Schema;
  delete out['$schema'];
  return withoutUnicodePatterns(out) as Schema;
}

function withoutUnicodePatterns(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutUnicodePatterns);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'pattern' && typeof v === 'string' && v.includes('\\p{')) continue;
    out[k] = withoutUnicodePatterns(v);
  }
  return out;
}

function parameters(where: 'path' | 'query', object: z.ZodObject | undefined): Schema[] {
  if (object === undefined) return [];
  return Object.entries(object.shape).map(([name, field]) => {
    const schema = jsonSchema(field as z.ZodType, 'input');
    const description = (field as z.ZodType).description;
    return {
      name,
      in: where,
      required: where === 'path' || !(field as z.ZodType).safeParse(undefined).success,
      schema,
      ...(description === undefined ? {} : { description }),
    };
  });
}

const json = (schema: Schema) => ({ 'application/json': { schema } });
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/** Schemas answered by several operations, referenced from `components`. */
const COMPONENTS: Record<string, z.ZodType> = {
  Error: errorSchema,
  ApiKey: apiKeyViewSchema,
  ApiKeyPage: keyPageSchema,
  OwnedApiKeyPage: ownedKeyPageSchema,
  CreatedApiKey: createdKeySchema,
  RolledApiKey: rolledKeySchema,
  ApiKeyUsage: keyUsageSchema,
  AuditPage: auditPageSchema,
  Modules: modulesSchema,
  ModelMetadata: modelMetadataSchema,
};
const componentName = new Map<z.ZodType, string>(Object.entries(COMPONENTS).map(([n, s]) => [s, n]));

function responseSchema(schema: z.ZodType | Schema): Schema {
  if (!(schema instanceof z.ZodType)) return schema;
  const name = componentName.get(schema);
  return name === undefined ? jsonSchema(schema, 'output') : ref(name);
}

/** A V2 inference request's shape as the gateway checks it (gateway/v2/validate-infer.ts). */
const inferenceRequestSchema: Schema = {
  type: 'object',
  required: ['inputs'],
  properties: {
    id: { type: 'string' },
    parameters: { type: 'object' },
    inputs: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['name', 'shape', 'datatype', 'data'],
        properties: {
          name: { type: 'string' },
          shape: { type: 'array', items: { type: 'integer', minimum: 0 } },
          datatype: { enum: [...V2_DATATYPES] },
          parameters: { type: 'object' },
          data: {},
        },
      },
    },
    outputs: {
      type: 'array',
      items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
    },
  },
};

/** What a new key's id leads to (OpenAPI links; a fuzzer follows them with real ids). */
const keyLinks: Schema = Object.fromEntries(
  ['getApiKey', 'getApiKeyUsage', 'rollApiKey', 'deleteApiKey'].map((operationId) => [
    operationId,
    { operationId, parameters: { id: '$response.body#/id' } },
  ]),
);

function operations(maxRollGraceSeconds: number): Operation[] {
  const keyPath = { pathParams: keyIdParamsSchema };
  return [
    {
      method: 'get',
      path: '/api/v1/apikeys',
      operationId: 'listApiKeys',
      summary: 'One page of your keys, newest first',
      security: 'bearer',
      query: listKeysQuerySchema,
      ok: { status: 200, description: 'A page of keys', schema: keyPageSchema },
      errors: [400, 401, 503],
    },
    {
      method: 'post',
      path: '/api/v1/apikeys',
      operationId: 'createApiKey',
      summary: 'Create a key; the answer holds the key, the only time it is sent',
      security: 'bearer',
      body: { schema: createKeyBodySchema, required: true },
      ok: { status: 201, description: 'The new key', schema: createdKeySchema, links: keyLinks },
      errors: [400, 401, 413, 415, 503],
    },
    {
      method: 'get',
      path: '/api/v1/apikeys/{id}',
      operationId: 'getApiKey',
      summary: 'One of your keys',
      security: 'bearer',
      ...keyPath,
      ok: { status: 200, description: 'The key', schema: apiKeyViewSchema },
      errors: [400, 401, 404, 503],
    },
    {
      method: 'delete',
      path: '/api/v1/apikeys/{id}',
      operationId: 'deleteApiKey',
      summary: 'Delete a key: refused on every gateway replica at once',
      security: 'bearer',
      ...keyPath,
      ok: { status: 204, description: 'Deleted' },
      errors: [400, 401, 404, 503],
    },
    {
      method: 'post',
      path: '/api/v1/apikeys/{id}/roll',
      operationId: 'rollApiKey',
      summary: 'A new key with the same grant; the old one works until its grace period ends',
      security: 'bearer',
      ...keyPath,
      body: { schema: rollKeyBodySchema(maxRollGraceSeconds), required: false },
      ok: {
        status: 201,
        description: 'The new key, and the old one as it now is',
        schema: rolledKeySchema,
        links: keyLinks,
      },
      errors: [400, 401, 404, 409, 413, 415, 503],
    },
    {
      method: 'get',
      path: '/api/v1/apikeys/{id}/usage',
      operationId: 'getApiKeyUsage',
      summary: 'Requests and refusals per minute (24 h) and per hour (30 days), top endpoints',
      security: 'bearer',
      ...keyPath,
      ok: { status: 200, description: 'The key’s usage', schema: keyUsageSchema },
      errors: [400, 401, 404, 503],
    },
    {
      method: 'get',
      path: '/api/v1/audit',
      operationId: 'listAuditEvents',
      summary: 'Events of your keys, newest first',
      security: 'bearer',
      query: auditQuerySchema,
      ok: { status: 200, description: 'A page of events', schema: auditPageSchema },
      errors: [400, 401, 503],
    },
    {
      method: 'get',
      path: '/api/v1/modules',
      operationId: 'listModules',
      summary: 'What a new key may be scoped to: your workflows, and the platform roles',
      security: 'bearer',
      ok: { status: 200, description: 'The modules and their roles', schema: modulesSchema },
      errors: [401, 503],
    },
    {
      method: 'get',
      path: '/api/v1/models',
      operationId: 'listModels',
      summary:
        'The Models: phase, replicas, what to fix, tensors, calls over the last hour, an example request',
      security: 'bearer',
      ok: { status: 200, description: 'Every Model', schema: modelPageSchema },
      errors: [401, 503],
    },
    {
      method: 'get',
      path: '/api/v1/me',
      operationId: 'whoami',
      summary: 'Who your token says you are, and whether you are an administrator',
      security: 'bearer',
      ok: { status: 200, description: 'The caller', schema: callerSchema },
      errors: [401],
    },
    {
      method: 'get',
      path: '/api/v1/admin/apikeys',
      operationId: 'adminListApiKeys',
      summary: 'Administrators: one page of every user’s keys (or one user’s), with their owner',
      security: 'bearer',
      query: adminListKeysQuerySchema,
      ok: { status: 200, description: 'A page of keys', schema: ownedKeyPageSchema },
      errors: [400, 401, 403, 503],
    },
    {
      method: 'delete',
      path: '/api/v1/admin/apikeys/{id}',
      operationId: 'adminDeleteApiKey',
      summary: 'Administrators: revoke anyone’s key (recorded in the audit trail)',
      security: 'bearer',
      ...keyPath,
      ok: { status: 204, description: 'Revoked' },
      errors: [400, 401, 403, 404, 503],
    },
    {
      method: 'post',
      path: '/api/v1/admin/offboard',
      operationId: 'offboardUser',
      summary: 'Administrators: revoke every key of one user in one action',
      security: 'bearer',
      body: { schema: offboardBodySchema, required: true },
      ok: { status: 200, description: 'The keys revoked', schema: offboardResultSchema },
      errors: [400, 401, 403, 413, 415, 503],
    },
    {
      method: 'get',
      path: '/v2/health/live',
      operationId: 'v2Live',
      summary: 'The gateway is up',
      security: 'none',
      ok: {
        status: 200,
        description: 'Live',
        schema: { type: 'object', properties: { live: { type: 'boolean' } } },
      },
      errors: [],
    },
    {
      method: 'get',
      path: '/v2/health/ready',
      operationId: 'v2Ready',
      summary: 'The gateway can check keys now',
      security: 'none',
      ok: {
        status: 200,
        description: 'Ready',
        schema: { type: 'object', properties: { ready: { type: 'boolean' } } },
      },
      errors: [503],
    },
    {
      method: 'get',
      path: '/v2/models/{name}',
      operationId: 'v2ModelMetadata',
      summary: 'A model’s metadata, as its runtime declares it',
      security: 'apikey',
      pathParams: z.object({ name: z.string().min(1) }),
      ok: { status: 200, description: 'Metadata', schema: modelMetadataSchema },
      errors: [401, 403, 404, 429, 502, 503, 504],
    },
    {
      method: 'post',
      path: '/v2/models/{name}/infer',
      operationId: 'v2Infer',
      summary: 'Inference; the request is checked against the model’s metadata first',
      security: 'apikey',
      pathParams: z.object({ name: z.string().min(1) }),
      body: { schema: inferenceRequestSchema, required: true },
      ok: { status: 200, description: 'The runtime’s answer', schema: { type: 'object' } },
      errors: [400, 401, 403, 404, 413, 415, 429, 502, 503, 504],
    },
    {
      method: 'get',
      path: '/events/platform/api/v1/{resource}',
      operationId: 'platformResource',
      summary: 'A platform resource, through its upstream (GET, PUT, POST as the key’s roles allow)',
      security: 'apikey',
      pathParams: z.object({ resource: z.string().min(1) }),
      ok: { status: 200, description: 'The upstream’s answer', schema: {} },
      errors: [400, 401, 403, 404, 429, 502, 503, 504],
    },
  ];
}

function operationObject(op: Operation): Schema {
  const responses: Record<string, unknown> = {
    [String(op.ok.status)]: {
      description: op.ok.description,
      ...(op.ok.schema === undefined ? {} : { content: json(responseSchema(op.ok.schema)) }),
      ...(op.ok.links === undefined ? {} : { links: op.ok.links }),
    },
  };
  // Any path with a parameter can be refused before routing (encoded separators, control
  // characters, traversal: gateway/routing/normalise.ts).
  const errors = op.pathParams === undefined ? op.errors : [...new Set([400, ...op.errors])].sort();
  for (const status of errors) {
    responses[String(status)] = { description: ERROR_TEXT[status] ?? 'Error', content: json(ref('Error')) };
  }
  const body = op.body;
  return {
    operationId: op.operationId,
    summary: op.summary,
    security: op.security === 'none' ? [] : [{ [op.security === 'bearer' ? 'oidc' : 'apiKey']: [] }],
    parameters: [...parameters('path', op.pathParams), ...parameters('query', op.query)],
    ...(body === undefined
      ? {}
      : {
          requestBody: {
            required: body.required,
            content: json(body.schema instanceof z.ZodType ? jsonSchema(body.schema, 'input') : body.schema),
          },
        }),
    responses,
  };
}

export function openApiDocument(opts: { maxRollGraceSeconds: number; version: string }): Schema {
  const paths: Record<string, Record<string, Schema>> = {};
  for (const op of operations(opts.maxRollGraceSeconds)) {
    (paths[op.path] ??= {})[op.method] = operationObject(op);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tollgate',
      version: opts.version,
      description:
        'API keys scoped to a module and roles, the gateway that checks them, and models served over the Open Inference Protocol v2.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: {
      schemas: Object.fromEntries(
        Object.entries(COMPONENTS).map(([name, s]) => [name, jsonSchema(s, 'output')]),
      ),
      securitySchemes: {
        oidc: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An OIDC access token' },
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: 'The value `Apikey <key>`',
        },
      },
    },
  };
}
