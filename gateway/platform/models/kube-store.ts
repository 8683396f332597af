import { ApiException, type CustomObjectsApi } from '@kubernetes/client-node';
import { TollgateError } from '../../../common/errors.js';
import {
  apiFailureDetail,
  isApiStatus,
  listAllCustomObjects,
  type CustomResourcePlace,
} from '../../../common/kube/custom-objects.js';
import {
  MODEL_API_VERSION,
  MODEL_GROUP,
  MODEL_KIND,
  MODEL_PLURAL,
  MODEL_VERSION,
  modelSchema,
  type Model,
} from '../../../common/resources/model.js';
import {
  mergeUserEntries,
  modelConflict,
  modelExists,
  modelNotFound,
  type ModelChange,
  type ModelStore,
  type NewModel,
} from './store.js';

/** Updates without a resourceVersion retry this often when the operator writes the status meanwhile. */
const CONFLICT_RETRIES = 5;

/** Model resources in one namespace of the API server. */
export class KubeModelStore implements ModelStore {
  private readonly resource: CustomResourcePlace;

  constructor(
    private readonly api: CustomObjectsApi,
    namespace: string,
  ) {
    this.resource = { group: MODEL_GROUP, version: MODEL_VERSION, namespace, plural: MODEL_PLURAL };
  }

  async list(): Promise<Model[]> {
    const items = await this.call('list', undefined, () => listAllCustomObjects(this.api, this.resource));
    const models: Model[] = [];
    for (const item of items) {
      // The CRD's schema holds stored objects to the contract; anything else is left out.
      const parsed = modelSchema.safeParse(item);
      if (parsed.success) models.push(parsed.data);
    }
    return models.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  }

  async get(name: string): Promise<Model | undefined> {
    try {
      return modelSchema.parse(
        await this.call('get', name, () => this.api.getNamespacedCustomObject({ ...this.resource, name })),
      );
    } catch (e) {
      if (isApiStatus(e, 404)) return undefined;
      throw e;
    }
  }

  async create(model: NewModel): Promise<Model> {
    const metadata: Record<string, unknown> = { name: model.name };
    if (model.labels !== undefined) metadata.labels = model.labels;
    if (model.annotations !== undefined) metadata.annotations = model.annotations;
    const body = { apiVersion: MODEL_API_VERSION, kind: MODEL_KIND, metadata, spec: model.spec };
    try {
      return modelSchema.parse(
        await this.call('create', model.name, () =>
          this.api.createNamespacedCustomObject({ ...this.resource, body }),
        ),
      );
    } catch (e) {
      if (isApiStatus(e, 409)) throw modelExists(model.name);
      throw e;
    }
  }

  async update(name: string, change: ModelChange): Promise<Model> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.get(name);
      if (current === undefined) throw modelNotFound(name);
      if (
        change.resourceVersion !== undefined &&
        change.resourceVersion !== current.metadata.resourceVersion
      ) {
        throw modelConflict(name);
      }
      const metadata: Model['metadata'] = {
        ...current.metadata,
        resourceVersion: change.resourceVersion ?? current.metadata.resourceVersion,
      };
      const labels = mergeUserEntries(current.metadata.labels, change.labels);
      const annotations = mergeUserEntries(current.metadata.annotations, change.annotations);
      delete metadata.labels;
      delete metadata.annotations;
      // The field manager's bookkeeping is the API server's to keep, not ours to send back.
      delete metadata.managedFields;
      if (labels !== undefined) metadata.labels = labels;
      if (annotations !== undefined) metadata.annotations = annotations;
      // The main resource ignores status (it is a subresource): sending it back changes nothing.
      const body = { ...current, metadata, spec: change.spec };
      try {
        return modelSchema.parse(
          await this.call('update', name, () =>
            this.api.replaceNamespacedCustomObject({ ...this.resource, name, body }),
          ),
        );
      } catch (e) {
        if (isApiStatus(e, 404)) throw modelNotFound(name);
        if (!isApiStatus(e, 409)) throw e;
        // The caller's own version is stale: theirs to resolve. Ours was only the operator's status write.
        if (change.resourceVersion !== undefined || attempt >= CONFLICT_RETRIES) throw modelConflict(name);
      }
    }
  }

  /**
   * Runs an API call. 404 and 409 pass through for the caller to name; what the API server
   * refuses as invalid (422, e.g. a rule of the CRD's schema) becomes a 400 with its message; any
   * other failure is a 503 that says where to look.
   */
  private async call<T>(verb: string, name: string | undefined, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (isApiStatus(e, 404) || isApiStatus(e, 409)) throw e;
      if (isApiStatus(e, 422) || isApiStatus(e, 400)) {
        throw new TollgateError(
          'invalid_model',
          `the Kubernetes API refused model "${name}": ${statusMessage(e)}`,
          {
            field: 'spec',
            cause: e,
          },
        );
      }
      throw new TollgateError(
        'model_store_unavailable',
        `the Kubernetes API could not ${verb} Model resources (${apiFailureDetail(e)}); check the API server and the gateway's RBAC`,
        { cause: e },
      );
    }
  }
}

/** The API server's own explanation from its Status body (the client keeps it as text or JSON). */
function statusMessage(e: unknown): string {
  if (!(e instanceof ApiException)) return String(e);
  const body: unknown = typeof e.body === 'string' ? safeJson(e.body) : e.body;
  const message = (body as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : `HTTP ${e.code}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { message: text };
  }
}
