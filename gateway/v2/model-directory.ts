import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { TollgateError } from '../../common/errors.js';
import type { ManifestCollection } from '../../common/resources/manifest-dir.js';
import {
  MODEL_GROUP,
  MODEL_PLURAL,
  MODEL_VERSION,
  type Model,
  type ModelSpec,
} from '../../common/resources/model.js';

/**
 * The Model resources as the gateway's V2 endpoints need them: whether a model exists and its
 * workflow when the route table has no route for it (the difference between "not ready yet", 503,
 * and "no such model", 404, and who may call it), and the list of models for the repository index.
 * Only asked off the happy path (a ready model has a route), so a short cache is enough.
 */
export interface ModelInfo {
  workflow: string | undefined;
  /** The names of spec.versions; undefined for a model with one unnamed version. */
  versions?: string[];
}

const infoOf = (spec: ModelSpec | undefined): ModelInfo => ({
  workflow: spec?.workflow,
  ...(spec?.versions === undefined ? {} : { versions: spec.versions.map((v) => v.name) }),
});

export interface ModelDirectory {
  find(name: string): Promise<ModelInfo | undefined>;
  /** Every model, by name. */
  list(): Promise<Array<ModelInfo & { name: string }>>;
}

const KNOWN_TTL_MS = 2_000;

/**
 * At most one listing per KNOWN_TTL_MS, and a model found in it: any caller may ask for any name
 * (made up, a new one per call), and a lookup per name would be an API server call per call.
 */
function cached(directory: Pick<ModelDirectory, 'list'>): ModelDirectory {
  let listed: { at: number; models: Promise<Array<ModelInfo & { name: string }>> } | undefined;
  let byName: { of: Promise<Array<ModelInfo & { name: string }>>; map: Map<string, ModelInfo> } | undefined;
  const self: ModelDirectory = {
    async find(name) {
      const models = self.list();
      const all = await models;
      if (byName?.of !== models)
        byName = { of: models, map: new Map(all.map(({ name: n, ...info }) => [n, info])) };
      return byName.map.get(name);
    },
    list() {
      // One listing at a time, its answer kept KNOWN_TTL_MS from when it came: on a slow API server
      // a listing that takes longer is never joined by another.
      if (listed === undefined || Date.now() - listed.at > KNOWN_TTL_MS) {
        const models = directory.list();
        const entry = { at: Infinity, models };
        listed = entry;
        models.then(
          () => {
            entry.at = Date.now();
          },
          // A failed listing is not kept: the next call asks again.
          () => {
            if (listed === entry) listed = undefined;
          },
        );
      }
      return listed.models;
    },
  };
  return self;
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

async function orUnavailable<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (err) {
    throw unavailable(err);
  }
}

/** Standalone mode: the Model manifests of the state directory. */
export function manifestModels(models: ManifestCollection<Model>): ModelDirectory {
  return cached({
    async list() {
      const all = await orUnavailable(models.list());
      return all.map((m) => ({ name: m.metadata.name, ...infoOf(m.spec) }));
    },
  });
}

interface ModelItem {
  metadata?: { name?: string; creationTimestamp?: string };
  spec?: ModelSpec;
  status?: { conditions?: Array<{ type?: string; reason?: string }> };
}

/** A Model refused for its name (another namespace's holds it): never the one a name means. */
const nameTaken = (item: ModelItem): boolean =>
  (item.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.reason === 'NameTaken');

/** Whether `a` rather than `b` is the Model its name means. */
function precedes(a: ModelItem, b: ModelItem): boolean {
  if (nameTaken(a) !== nameTaken(b)) return nameTaken(b);
  return (a.metadata?.creationTimestamp ?? '') < (b.metadata?.creationTimestamp ?? '');
}

/** On a cluster: Model resources of any namespace (model names are global to the gateway's /v2). */
export function kubeModels(kc: KubeConfig): ModelDirectory {
  const api = kc.makeApiClient(CustomObjectsApi);
  const page = (opts: { limit: number; _continue?: string }) =>
    orUnavailable(
      api.listClusterCustomObject({
        group: MODEL_GROUP,
        version: MODEL_VERSION,
        plural: MODEL_PLURAL,
        ...opts,
      }) as Promise<{ items?: ModelItem[]; metadata?: { continue?: string } }>,
    );
  return cached({
    async list() {
      const chosen = new Map<string, ModelItem>();
      let next: string | undefined;
      do {
        const got = await page({ limit: 500, ...(next ? { _continue: next } : {}) });
        for (const item of got.items ?? []) {
          const name = item.metadata?.name;
          if (!name) continue;
          const held = chosen.get(name);
          // Two namespaces' Models of one name speak for it as the operator decides: never the one
          // refused for it, else the oldest (one just made has no status yet).
          if (held === undefined || precedes(item, held)) chosen.set(name, item);
        }
        next = got.metadata?.continue || undefined;
      } while (next !== undefined);
      return [...chosen].map(([name, item]) => ({ name, ...infoOf(item.spec) }));
    },
  });
}

/** A gateway that knows no Model resources: only model routes exist (benchmarks, some tests). */
export const noModels: ModelDirectory = {
  find: async () => undefined,
  list: async () => [],
};
