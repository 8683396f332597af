import {
  MODEL_API_VERSION,
  MODEL_KIND,
  MODEL_PLURAL,
  modelSchema,
  type Model,
} from '../../../common/resources/model.js';
import {
  ManifestExistsError,
  type ManifestCollection,
  type ManifestDir,
} from '../../../common/resources/manifest-dir.js';
import { randomUUID } from 'node:crypto';
import {
  apiServerTimestamp,
  manifestUid,
  nextGeneration,
  nextResourceVersion,
} from '../../../common/resources/object-meta.js';
import {
  mergeUserEntries,
  modelConflict,
  modelExists,
  modelNotFound,
  type ModelChange,
  type ModelStore,
  type NewModel,
} from './store.js';

/**
 * Model manifests in the standalone state directory (`<dir>/models/<name>.yaml`), the ones the
 * standalone operator serves. What the API server would fill in is written here: the creation
 * time, a generation that moves when the spec changes, and a resourceVersion that moves on every
 * write, so clients use optimistic concurrency the same way in both modes.
 */
export class DirModelStore implements ModelStore {
  private readonly models: ManifestCollection<Model>;

  constructor(dir: ManifestDir) {
    this.models = dir.collection(MODEL_PLURAL, modelSchema);
  }

  async list(): Promise<Model[]> {
    return (await this.models.list())
      .map(withUid)
      .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  }

  async get(name: string): Promise<Model | undefined> {
    const model = await this.models.get(name);
    return model === undefined ? undefined : withUid(model);
  }

  async create(model: NewModel): Promise<Model> {
    const metadata: Model['metadata'] = {
      name: model.name,
      // Second precision, as the API server records it.
      creationTimestamp: apiServerTimestamp(),
      // Its own, as the API server gives one: made again under the name, it starts clean.
      uid: randomUUID(),
      generation: 1,
      resourceVersion: '1',
    };
    if (model.labels !== undefined) metadata.labels = model.labels;
    if (model.annotations !== undefined) metadata.annotations = model.annotations;
    try {
      return await this.models.create({
        apiVersion: MODEL_API_VERSION,
        kind: MODEL_KIND,
        metadata,
        spec: model.spec,
      });
    } catch (e) {
      if (e instanceof ManifestExistsError) throw modelExists(model.name);
      throw e;
    }
  }

  async update(name: string, change: ModelChange): Promise<Model> {
    const current = await this.models.get(name);
    if (current === undefined) throw modelNotFound(name);
    const version = current.metadata.resourceVersion ?? '1';
    if (change.resourceVersion !== undefined && change.resourceVersion !== version) throw modelConflict(name);
    const metadata: Model['metadata'] = {
      ...current.metadata,
      generation: nextGeneration(current.metadata.generation, current.spec, change.spec),
      resourceVersion: nextResourceVersion(version),
    };
    const labels = mergeUserEntries(current.metadata.labels, change.labels);
    const annotations = mergeUserEntries(current.metadata.annotations, change.annotations);
    delete metadata.labels;
    delete metadata.annotations;
    if (labels !== undefined) metadata.labels = labels;
    if (annotations !== undefined) metadata.annotations = annotations;
    return this.models.put({ ...current, metadata, spec: change.spec });
  }
}

/** A manifest written by hand names no uid: the one the standalone operator gives it. */
const withUid = (model: Model): Model =>
  model.metadata.uid === undefined
    ? { ...model, metadata: { ...model.metadata, uid: manifestUid(model.metadata.name) } }
    : model;
