import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { LRUCache } from 'lru-cache';
import { TollgateError } from '../../common/errors.js';
import type { ManifestCollection } from '../../common/resources/manifest-dir.js';
import { MODEL_GROUP, MODEL_PLURAL, MODEL_VERSION, type Model } from '../../common/resources/model.js';

/**
 * Whether a model exists, and its workflow, when the route table has no route for it: the
 * difference between "not ready yet" (503) and "no such model" (404), and who may call it. Only
 * asked off the happy path (a ready model has a route), so a short cache is enough.
 */
export interface ModelInfo {
  workflow: string | undefined;
}

export type FindModel = (name: string) => Promise<ModelInfo | undefined>;

const KNOWN_TTL_MS = 2_000;

function cached(find: FindModel): FindModel {
  const cache = new LRUCache<string, { info: ModelInfo | undefined }>({ max: 1_000, ttl: KNOWN_TTL_MS });
  return async (name) => {
    const hit = cache.get(name);
    if (hit !== undefined) return hit.info;
    const info = await find(name);
    cache.set(name, { info });
    return info;
  };
}

const unavailable = (cause: unknown): TollgateError =>
  new TollgateError(
    'model_directory_unavailable',
    'the gateway cannot read the Model resources right now; retry shortly',
    {
      cause,
      headers: { 'retry-after': '1' },
    },
  );

/** Standalone mode: the Model manifests of the state directory. */
export function manifestModels(models: ManifestCollection<Model>): FindModel {
  return cached(async (name) => {
    let model: Model | undefined;
    try {
      model = await models.get(name);
    } catch (err) {
      throw unavailable(err);
    }
    return model === undefined ? undefined : { workflow: model.spec.workflow };
  });
}

/** On a cluster: Model resources of any namespace (model names are global to the gateway's /v2). */
export function kubeModels(kc: KubeConfig): FindModel {
  const api = kc.makeApiClient(CustomObjectsApi);
  return cached(async (name) => {
    let list: { items?: Array<{ spec?: { workflow?: string } }> };
    try {
      list = (await api.listClusterCustomObject({
        group: MODEL_GROUP,
        version: MODEL_VERSION,
        plural: MODEL_PLURAL,
        fieldSelector: `metadata.name=${name}`,
        limit: 1,
      })) as typeof list;
    } catch (err) {
      throw unavailable(err);
    }
    const item = list.items?.[0];
    return item === undefined ? undefined : { workflow: item.spec?.workflow };
  });
}
