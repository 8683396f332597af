import { isTollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { checkModelFolder, type FolderCheck } from '../../common/model-settings/check-folder.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { Route } from '../../common/resources/grant.js';
import {
  DEFAULT_MLFLOW_IMAGE,
  DEFAULT_SKLEARN_IMAGE,
  MODEL_API_VERSION,
  MODEL_KIND,
  type Model,
  type ModelGateway,
} from '../../common/resources/model.js';
import type { RouteWriter } from '../../common/routes/workflow-routes.js';
import type { EventRecorder } from '../events.js';
import type { RuntimeDriver, RuntimePlan, RuntimeState } from '../serving/runtime-driver.js';
import {
  ConflictError,
  parseRefKey,
  refKey,
  type ResourceRef,
  type ResourceSource,
} from '../framework/resource-source.js';
import type { CredentialsResolver } from '../storage/credentials.js';
import { openStore } from '../storage/open-store.js';
import {
  withConflictRetry,
  type ReconcileResult,
  type Reconciler,
  type Watches,
} from '../framework/controller.js';
import { OWNER_KEY } from '../../common/resources/labels.js';
import { desiredStatus, sameStatus, type Observation } from './model-status.js';

export const MODEL_FINALIZER = 'tollgate.dev/model-routes';
/** How often a Model whose folder is wrong looks again (the fix may be an upload, not an edit). */
const RECHECK_MS = 30_000;
/** Storage errors a user fixes (wrong bucket, missing secret): a condition, not a retry storm. */
const USER_STORAGE_ERRORS: Record<string, string> = {
  no_such_bucket: 'NoSuchBucket',
  no_such_folder: 'NoSuchFolder',
  access_denied: 'AccessDenied',
  credentials_not_found: 'CredentialsNotFound',
  invalid_storage_uri: 'InvalidStorageUri',
  object_vanished: 'ObjectVanished',
};

export interface ModelControllerDeps {
  models: ResourceSource<Model>;
  runtime: RuntimeDriver;
  routes: RouteWriter;
  events: EventRecorder;
  credentials: CredentialsResolver;
  log: Logger;
  /** Replaces both default images (an image built from images/mlserver serves both kinds). */
  runtimeImage?: string;
  /** Where a Model's calls are checked when its spec does not say. */
  defaultGateway?: ModelGateway;
}

const isConflict = (e: unknown) => e instanceof ConflictError;
const routeSource = (ref: ResourceRef) => `model/${ref.namespace}/${ref.name}`;

/**
 * Model → checked settings → runtime (Deployment + Service) → routes → status. Level-triggered:
 * every pass recomputes everything from the Model, the storage folder and the runtime's state.
 */
export class ModelReconciler implements Reconciler {
  readonly name = 'model';
  /** The valid folder check of each Model's current uid+generation: storage is read once per spec, not per pod change. */
  private readonly checked = new Map<string, { stamp: string; check: FolderCheck }>();
  /** Each Model's workflow and the route keys it holds: drops the old bda route when the workflow changes, and tells the sweep what is live. */
  private readonly routed = new Map<string, { workflow: string | undefined; keys: string[] }>();
  /** Workflows of Models deleted without the finalizer, to clean their routes. */
  private readonly tombstones = new Map<string, string | undefined>();

  /** Models, and the runtime's workloads (a Deployment's readiness changes its Model's status). */
  readonly watches: Watches<Model>;

  constructor(private readonly deps: ModelControllerDeps) {
    this.watches = {
      for: deps.models,
      onDeleted: (ref, gone) => this.noteDeleted(ref, gone),
      owns: [deps.runtime],
      workers: 8,
    };
  }

  /** The source's onChange: remembers what a deleted Model was routed under. */
  noteDeleted(ref: ResourceRef, model: Model | undefined): void {
    if (model) this.tombstones.set(refKey(ref), model.spec.workflow);
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const ref = parseRefKey(key);
    const { models, runtime } = this.deps;
    let model = models.get(ref);
    if (!model) {
      // Gone without the finalizer's pass: a standalone manifest is deleted at once, and a cluster
      // Model may have lost its finalizer by hand. Either way nothing may keep serving it.
      await this.removeRoutes(ref, this.tombstones.get(key));
      await runtime.remove(ref);
      this.tombstones.delete(key);
      this.forget(key);
      return undefined;
    }
    if (model.metadata.deletionTimestamp) {
      if (!(model.metadata.finalizers ?? []).includes(MODEL_FINALIZER)) return undefined;
      await this.removeRoutes(ref, model.spec.workflow);
      await runtime.remove(ref);
      await withConflictRetry(
        model,
        () => models.read(ref),
        (m) =>
          models.updateFinalizers(
            m,
            (m.metadata.finalizers ?? []).filter((f) => f !== MODEL_FINALIZER),
          ),
        isConflict,
      );
      this.forget(key);
      return undefined;
    }
    if (!(model.metadata.finalizers ?? []).includes(MODEL_FINALIZER)) {
      const updated = await withConflictRetry(
        model,
        () => models.read(ref),
        (m) => models.updateFinalizers(m, [...(m.metadata.finalizers ?? []), MODEL_FINALIZER]),
        isConflict,
      );
      if (!updated) return undefined;
      model = updated;
    }

    const observation = await this.observe(model);
    let state: RuntimeState | undefined;
    if (observation.kind === 'settings' && observation.check.ok) {
      state = await runtime.apply(this.plan(model, observation.check));
      observation.runtime = state;
    } else {
      await runtime.remove(ref);
    }
    await this.syncRoutes(model, state);
    await this.writeStatus(model, observation);
    return observation.kind === 'settings' && observation.check.ok
      ? undefined
      : { requeueAfterMs: RECHECK_MS };
  }

  private plan(model: Model, check: Extract<FolderCheck, { ok: true }>): RuntimePlan {
    const override = model.spec.runtime?.implementation;
    const settings = override ? { ...check.settings, implementation: override } : check.settings;
    const image =
      model.spec.runtime?.image ??
      this.deps.runtimeImage ??
      (check.generated ? DEFAULT_MLFLOW_IMAGE : DEFAULT_SKLEARN_IMAGE);
    return {
      model,
      settings,
      settingsGenerated: check.generated || override !== undefined,
      image,
      gateway: model.spec.gateway ?? this.deps.defaultGateway ?? 'central',
    };
  }

  private async observe(model: Model): Promise<Observation> {
    const { namespace = 'default', name } = model.metadata;
    const key = refKey({ namespace, name });
    const stamp = `${model.metadata.uid}:${model.metadata.generation}`;
    const cached = this.checked.get(key);
    if (cached?.stamp === stamp) return { kind: 'settings', check: cached.check };
    try {
      const env = await this.deps.credentials.envFor(namespace, model.spec.credentials?.secretName);
      const store = openStore(model.spec.storageUri, env);
      const files = (await store.list()).map((o) => o.path);
      const check = await checkModelFolder({ files, read: (p) => store.readText(p) }, name);
      if (check.ok) this.checked.set(key, { stamp, check });
      else this.checked.delete(key);
      return { kind: 'settings', check };
    } catch (e) {
      const reason = isTollgateError(e) ? USER_STORAGE_ERRORS[e.code] : undefined;
      if (reason === undefined || !isTollgateError(e)) throw e;
      return { kind: 'storage-error', reason, message: e.message };
    }
  }

  private async syncRoutes(model: Model, state: RuntimeState | undefined): Promise<void> {
    const ref = { namespace: model.metadata.namespace ?? 'default', name: model.metadata.name };
    const key = refKey(ref);
    const workflow = model.spec.workflow;
    const previous = this.routed.get(key)?.workflow;
    if (previous !== undefined && previous !== workflow) {
      await this.deps.routes.remove(redisKeys.bdaRoute(previous, ref.name), routeSource(ref));
    }
    if (!state || state.readyReplicas === 0) {
      await this.removeRoutes(ref, workflow);
      this.routed.set(key, { workflow, keys: [] });
      return;
    }
    // The workflow's owner, as the models platform API records it (`tollgate.dev/owner`, checked
    // there to own the workflow): without it the workflow would stop counting as its owner's.
    const owner = workflow ? model.metadata.annotations?.[OWNER_KEY] : undefined;
    const route: Route = {
      url: state.url,
      source: routeSource(ref),
      ...(workflow ? { workflow } : {}),
      ...(owner ? { owner } : {}),
      ...(state.grantAudience === undefined ? {} : { grantAudience: state.grantAudience }),
    };
    const keys = [
      redisKeys.modelRoute(ref.name),
      ...(workflow ? [redisKeys.bdaRoute(workflow, ref.name)] : []),
    ];
    for (const k of keys) await this.deps.routes.put(k, route);
    this.routed.set(key, { workflow, keys });
  }

  /** The route keys this controller currently holds. */
  liveRoutes(): string[] {
    return [...this.routed.values()].flatMap((r) => r.keys);
  }

  private async removeRoutes(ref: ResourceRef, workflow: string | undefined): Promise<void> {
    await this.deps.routes.remove(redisKeys.modelRoute(ref.name), routeSource(ref));
    if (workflow) await this.deps.routes.remove(redisKeys.bdaRoute(workflow, ref.name), routeSource(ref));
  }

  private async writeStatus(model: Model, obs: Observation): Promise<void> {
    const ref = { namespace: model.metadata.namespace ?? 'default', name: model.metadata.name };
    const before = model.status;
    const status = desiredStatus(model, obs, new Date());
    if (sameStatus(before, status)) return;
    const written = await withConflictRetry(
      model,
      () => this.deps.models.read(ref),
      (m) => this.deps.models.updateStatus({ ...m, status: desiredStatus(m, obs, new Date()) }),
      isConflict,
    );
    if (!written || before?.phase === status.phase) return;
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    const settings = status.conditions?.find((c) => c.type === 'SettingsValid');
    const cause = status.phase === 'Failed' && settings?.status === 'False' ? settings : ready;
    await this.deps.events.record(
      { ...written, apiVersion: MODEL_API_VERSION, kind: MODEL_KIND },
      status.phase === 'Failed' ? 'Warning' : 'Normal',
      cause?.reason ?? status.phase ?? 'Unknown',
      `${status.phase}: ${cause?.message ?? ''}`,
    );
  }

  private forget(key: string): void {
    this.routed.delete(key);
    this.checked.delete(key);
  }
}
