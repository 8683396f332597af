import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { TollgateError } from '../../../common/errors.js';
import { scopeAllows } from '../../../common/apikey/model-scope.js';
import type { Logger } from '../../../common/logger.js';
import type { KeyGrant } from '../../../common/resources/grant.js';
import {
  isModelName,
  MODEL_API_VERSION,
  MODEL_KIND,
  modelSpecSchema,
  type Model,
  type ModelSpec,
} from '../../../common/resources/model.js';
import type { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { validate } from '../../api/validate.js';
import type { PlatformResourceHandler } from '../../routing/events-router.js';
import { readJsonBody } from './read-json.js';
import { OWNER_KEY } from '../../../common/resources/labels.js';
import { RESERVED_PREFIX, modelNotFound, type ModelStore } from './store.js';
import { versionProblems } from '../../../common/resources/model-versions.js';

/**
 * The built-in `models` platform resource, `/events/platform/api/v1/models`:
 *
 *   GET  /models[?workflow=<id>]   { "items": [Model, ...] }, by name
 *   POST /models                   create: { metadata: { name, labels?, annotations? }, spec } -> 201
 *   GET  /models/<name>            the Model, with its status
 *   PUT  /models/<name>            replace the spec (and the labels / annotations given) -> 200;
 *                                  metadata.resourceVersion, if sent, must be the current one
 *
 * The bodies are the Model resource's own shape, so what `kubectl get model -o json` shows can be
 * sent back. The events router has already checked the key's roles for the method.
 */
export interface ModelsResourceDeps {
  store: ModelStore;
  /** To check that a model is attached only to a workflow of the caller's. */
  workflows: WorkflowRoutes;
  log: Logger;
}

/** A Model is small: its spec names a folder in storage, never the model itself. */
const BODY_LIMIT_BYTES = 64 * 1024;
const COLLECTION_PATH = '/events/platform/api/v1/models';

// Kubernetes label syntax: an optional DNS-subdomain prefix and a name of at most 63 characters.
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;
const notReserved = (entries: Record<string, string>): boolean =>
  Object.keys(entries).every((k) => !k.startsWith(RESERVED_PREFIX));
const reservedMessage = `keys under ${RESERVED_PREFIX} are Tollgate's own; choose another prefix`;

// A Kubernetes quantity (as the CRD's pattern): 500m, 2, 1.5Gi, 1e3.
const QUANTITY =
  /^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/;
const quantity = z.union([
  z.int().min(0),
  z.string().regex(QUANTITY, 'a quantity is like 500m, 2, 512Mi or 1Gi'),
]);

const bodySchema = z.strictObject({
  apiVersion: z
    .literal(MODEL_API_VERSION, { error: `apiVersion must be "${MODEL_API_VERSION}", or left out` })
    .optional(),
  kind: z.literal(MODEL_KIND, { error: `kind must be "${MODEL_KIND}", or left out` }).optional(),
  metadata: z
    .strictObject({
      name: z.string().optional(),
      labels: z
        .record(
          z
            .string()
            .max(316)
            .regex(LABEL_KEY, 'a label key is [prefix/]name: letters, digits, "-", "_", "."'),
          z.string().regex(LABEL_VALUE, 'a label value is at most 63 letters, digits, "-", "_" or "."'),
        )
        .refine(notReserved, reservedMessage)
        .optional(),
      annotations: z
        .record(z.string().min(1).max(316), z.string().max(65_536))
        .refine(notReserved, reservedMessage)
        .optional(),
      resourceVersion: z.string().min(1).max(64).optional(),
    })
    .optional(),
  spec: z.strictObject({
    ...modelSpecSchema.shape,
    // The CRD checks quantities with a pattern; checked here too, so both stores refuse alike.
    resources: z
      .strictObject({
        requests: z.record(z.string().min(1).max(253), quantity).optional(),
        limits: z.record(z.string().min(1).max(253), quantity).optional(),
      })
      .optional(),
  }),
});
type ModelBody = z.output<typeof bodySchema>;

const listQuerySchema = z.strictObject({
  workflow: z.string().min(1).max(128).optional(),
});

export function createModelsResource(deps: ModelsResourceDeps): PlatformResourceHandler {
  return async (req, res, { grant, path }) => {
    const method = req.method ?? 'GET';
    // segments: events, platform, api, v1, models[, <name>]
    const rest = path.segments.slice(5);
    if (rest.length === 0) {
      if (method === 'GET') return list(deps, res, grant, path.query);
      if (method === 'POST') return create(deps, res, grant, await readBody(req));
      throw methodNotAllowed(method, 'GET, POST', 'the models collection');
    }
    const [name] = rest;
    if (rest.length > 1 || name === undefined) {
      throw new TollgateError(
        'unknown_endpoint',
        `no such endpoint under ${COLLECTION_PATH}; use /models or /models/<name>`,
      );
    }
    // Before the model is looked up: a key limited to models learns nothing of the others.
    checkScope(grant, name);
    if (method === 'GET') return read(deps, res, name);
    if (method === 'PUT') return update(deps, res, grant, name, await readBody(req));
    throw methodNotAllowed(method, 'GET, PUT', 'a model');
  };
}

async function readBody(req: Parameters<PlatformResourceHandler>[0]): Promise<ModelBody> {
  const body = await readJsonBody(req, BODY_LIMIT_BYTES);
  if (typeof body === 'object' && body !== null && 'status' in body) {
    throw new TollgateError(
      'read_only_field',
      'status is written by the operator; send metadata and spec only',
      {
        field: 'status',
      },
    );
  }
  return validate(bodySchema, body, 'body');
}

/** A key limited to models (its `models`) reads and writes those only. */
function checkScope(grant: KeyGrant, name: string): void {
  if (scopeAllows(grant.models, name)) return;
  throw new TollgateError(
    'model_not_in_key_scope',
    `this key may use only ${(grant.models ?? []).join(', ')}; model '${name}' is not among them`,
  );
}

async function list(
  deps: ModelsResourceDeps,
  res: ServerResponse,
  grant: KeyGrant,
  query: string,
): Promise<void> {
  const filters = validate(listQuerySchema, Object.fromEntries(new URLSearchParams(query)), 'query');
  const models = await deps.store.list();
  const items = models.filter(
    (m) =>
      (filters.workflow === undefined || m.spec.workflow === filters.workflow) &&
      scopeAllows(grant.models, m.metadata.name),
  );
  send(res, 200, { items: items.map(view) });
}

async function read(deps: ModelsResourceDeps, res: ServerResponse, name: string): Promise<void> {
  const model = isModelName(name) ? await deps.store.get(name) : undefined;
  if (model === undefined) throw modelNotFound(name);
  send(res, 200, view(model));
}

async function create(
  deps: ModelsResourceDeps,
  res: ServerResponse,
  grant: KeyGrant,
  body: ModelBody,
): Promise<void> {
  const name = body.metadata?.name;
  if (name === undefined || !isModelName(name)) {
    throw new TollgateError(
      'invalid_field',
      "metadata.name must be model-<id>: lowercase letters, digits and '-', at most 63 characters, e.g. model-iris",
      { field: 'metadata.name' },
    );
  }
  checkScope(grant, name);
  if (body.metadata?.resourceVersion !== undefined) {
    throw new TollgateError(
      'invalid_field',
      'a new model has no resourceVersion; remove metadata.resourceVersion',
      {
        field: 'metadata.resourceVersion',
      },
    );
  }
  const spec = checkedSpec(name, body.spec as ModelSpec);
  await checkWorkflow(deps, grant, spec.workflow);
  const created = await deps.store.create({
    name,
    spec,
    ...(body.metadata?.labels === undefined ? {} : { labels: body.metadata.labels }),
    annotations: { ...body.metadata?.annotations, [OWNER_KEY]: grant.owner },
  });
  deps.log.info({ model: name, keyId: grant.id, owner: grant.owner }, 'model created');
  send(res, 201, view(created), { location: `${COLLECTION_PATH}/${name}` });
}

async function update(
  deps: ModelsResourceDeps,
  res: ServerResponse,
  grant: KeyGrant,
  name: string,
  body: ModelBody,
): Promise<void> {
  if (body.metadata?.name !== undefined && body.metadata.name !== name) {
    throw new TollgateError(
      'invalid_field',
      `metadata.name "${body.metadata.name}" differs from the path's "${name}"; a model cannot be renamed`,
      {
        field: 'metadata.name',
      },
    );
  }
  const current = isModelName(name) ? await deps.store.get(name) : undefined;
  if (current === undefined) throw modelNotFound(name);
  const spec = checkedSpec(name, body.spec as ModelSpec);
  // Changing a model that serves a workflow changes what that workflow's keys reach: only the
  // workflow's owner may, whether the change keeps, moves or detaches it.
  await checkWorkflow(deps, grant, current.spec.workflow);
  if (spec.workflow !== current.spec.workflow) await checkWorkflow(deps, grant, spec.workflow);
  // A model's name is where its callers send their data: only the user who made it through this
  // API may point it at other files. One made outside it (kubectl, a manifest) has no owner here:
  // the administrator's, which the platform's editor role changes.
  const owner = current.metadata.annotations?.[OWNER_KEY];
  if (owner !== undefined && owner !== grant.owner) {
    throw new TollgateError(
      'model_not_owned',
      `model "${name}" was made by another user; only the user who made it changes it`,
    );
  }
  const updated = await deps.store.update(name, {
    spec,
    ...(body.metadata?.labels === undefined ? {} : { labels: body.metadata.labels }),
    ...(body.metadata?.annotations === undefined ? {} : { annotations: body.metadata.annotations }),
    ...(body.metadata?.resourceVersion === undefined
      ? {}
      : { resourceVersion: body.metadata.resourceVersion }),
  });
  deps.log.info({ model: name, keyId: grant.id, owner: grant.owner }, 'model updated');
  send(res, 200, view(updated));
}

/** The CRD's cross-field rules on versions and traffic, for both stores (the API server checks them too). */
function checkedSpec(name: string, spec: ModelSpec): ModelSpec {
  const [first] = versionProblems(name, spec);
  if (first !== undefined) throw new TollgateError('invalid_field', first.message, { field: first.field });
  // The platform's Models live in Tollgate's own namespace, where the webhook puts no sidecar (the
  // operator would refuse it there too; said now, not in a status the caller may never read). Left
  // out, it is written as central: the chart's default (models.gateway) may be sidecar.
  if (spec.gateway === 'sidecar')
    throw new TollgateError(
      'invalid_field',
      "spec.gateway: sidecar is for Models in a team's own namespace (kubectl apply); a model made here is called through the central gateway only: leave spec.gateway out or set it to central",
      { field: 'spec.gateway' },
    );
  return { ...spec, gateway: 'central' };
}

/**
 * A model attached to a workflow is callable with that workflow's bda keys, so only the
 * workflow's owner may attach one: otherwise a platform key could reach into another user's
 * workflow, or hand a model to keys its owner never meant to serve.
 */
async function checkWorkflow(
  deps: ModelsResourceDeps,
  grant: KeyGrant,
  workflow: string | undefined,
): Promise<void> {
  if (workflow === undefined) return;
  const owned = await deps.workflows.ownedBy(grant.owner);
  if (!owned.some((w) => w.workflow === workflow)) {
    throw new TollgateError(
      'workflow_not_owned',
      `spec.workflow "${workflow}" is not a workflow of this key's owner; attach models to your own workflows (GET /api/v1/modules lists them)`,
    );
  }
}

/** The resource as stored, without the API server's field-manager bookkeeping. */
function view(model: Model): Model {
  const { managedFields: _managedFields, ...metadata } = model.metadata as Model['metadata'] & {
    managedFields?: unknown;
  };
  return { ...model, metadata };
}

function methodNotAllowed(method: string, allow: string, what: string): TollgateError {
  return new TollgateError('method_not_allowed', `${method} is not allowed on ${what}; use ${allow}`, {
    headers: { allow },
  });
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}
