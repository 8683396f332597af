import { z } from 'zod';
import { MODEL } from '../v2/endpoint.js';
import { modelMetadataSchema } from '../v2/metadata.js';
import { V2_ENDPOINTS } from '../v2/endpoints/index.js';
import { auditPageSchema } from './routes/list-audit.js';
import { managementRoutes } from './routes/index.js';
import { MANAGEMENT_BASE, type ContractSettings, type JsonSchema, type OperationDoc } from './route.js';
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
  identityViewSchema,
  identityListSchema,
  creditsStateSchema,
  webhookViewSchema,
  webhookWithSecretSchema,
  deliverySchema,
} from './views.js';

/**
 * The OpenAPI 3.1 document of Tollgate's HTTP surface, generated from the zod schemas the handlers
 * validate with and answer in (views.ts, routes/*): the management API in full; of `/events` and
 * `/v2`, what Tollgate itself decides (its checks and its errors; the bodies are the upstream's).
 */
type Schema = JsonSchema;

const ERROR_TEXT: Record<number, string> = {
  400: 'The request is invalid: `field` names what to fix',
  401: 'Missing, malformed, unknown or expired credentials',
  403: 'The credentials do not allow this (admin routes: not an administrator)',
  404: 'Not found (another user’s key is not found either)',
  405: 'Method not allowed here (see Allow)',
  409: 'A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued',
  410: 'Gone: what the cursor pointed after is no longer kept; start again without it',
  413: 'The body is larger than the gateway accepts',
  415: 'The body is not JSON',
  429: 'A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After)',
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

function parameters(where: 'path' | 'query' | 'header', object: z.ZodObject | undefined): Schema[] {
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
  Identity: identityViewSchema,
  IdentityList: identityListSchema,
  CreditsState: creditsStateSchema,
  Webhook: webhookViewSchema,
  WebhookWithSecret: webhookWithSecretSchema,
  Delivery: deliverySchema,
  AuditPage: auditPageSchema,
  Modules: modulesSchema,
  ModelMetadata: modelMetadataSchema,
  ModelPage: modelPageSchema,
  Caller: callerSchema,
  OffboardResult: offboardResultSchema,
};
const componentName = new Map<z.ZodType, string>(Object.entries(COMPONENTS).map(([n, s]) => [s, n]));

function responseSchema(schema: z.ZodType | Schema): Schema {
  if (!(schema instanceof z.ZodType)) return schema;
  const name = componentName.get(schema);
  return name === undefined ? jsonSchema(schema, 'output') : ref(name);
}

/** The management routes, as each declares itself (routes/). */
function managementOperations(settings: ContractSettings): OperationDoc[] {
  return managementRoutes.map(({ handler: _handler, beforeBody: _beforeBody, path, body, auth, ...doc }) => ({
    ...doc,
    path: MANAGEMENT_BASE + path,
    // A scanner's report is admitted by the signature over its body, not by a token.
    security: auth === 'scanner-signature' ? 'none' : 'bearer',
    // Every user's calls are paced (user-pace.ts).
    errors: auth === 'scanner-signature' ? doc.errors : [...new Set([...doc.errors, 429])].sort(),
    ...(body === undefined ? {} : { body: typeof body === 'function' ? body(settings) : body }),
  }));
}

/** The V2 endpoints that document themselves (gateway/v2/endpoints/), as each declares itself. */
function v2Operations(): OperationDoc[] {
  return V2_ENDPOINTS.flatMap((e) =>
    e.openapi === undefined
      ? []
      : [
          {
            ...e.openapi,
            method: e.method === 'GET' ? ('get' as const) : ('post' as const),
            path: `/${['v2', ...e.path].join('/').replace(MODEL, '{name}')}`,
            security: e.security,
            ...(e.forModel ? { pathParams: z.object({ name: z.string().min(1) }) } : {}),
          },
        ],
  );
}

/** Of `/v2` and `/events`, what Tollgate itself decides (the bodies are the upstream's). */
function dataPlaneOperations(): OperationDoc[] {
  return [
    ...v2Operations(),
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

function operationObject(op: OperationDoc): Schema {
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
    parameters: [
      ...parameters('path', op.pathParams),
      ...parameters('query', op.query),
      ...parameters('header', op.headers),
    ],
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
  for (const op of [...managementOperations(opts), ...dataPlaneOperations()]) {
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
