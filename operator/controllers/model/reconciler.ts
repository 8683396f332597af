import { MODEL_API_VERSION, MODEL_KIND, type Model } from '../../../common/resources/model.js';
import { servedVersions, versionProblems } from '../../../common/resources/model-versions.js';
import {
  withConflictRetry,
  type ReconcileResult,
  type Reconciler,
  type Watches,
} from '../../framework/controller.js';
import {
  isConflict,
  parseRefKey,
  refKey,
  sourceKey,
  type ResourceRef,
  type ResourceSource,
} from '../../framework/resource-source.js';
import type { CredentialsResolver } from '../../storage/credentials.js';
import type { SidecarPlacement } from '../../webhook/sidecar-placement.js';
import { specOrMetadataChanged } from '../../framework/predicates.js';
import { FolderChecks, RECHECK_MS } from './folder-checks.js';
import type { KeptNameStore } from './kept-names.js';
import { MODEL_FINALIZER, NameOwnership } from './name-ownership.js';
import { effectiveSpec } from './rollout.js';
import { RolloutJudge, type FiguresOf } from './rollout-judge.js';
import { ModelRoutes, type RouteOptions } from './routes.js';
import {
  desiredStatus,
  invalidVersionsStatus,
  nameTakenStatus,
  sidecarUnavailableStatus,
  type VersionResult,
} from './status.js';
import { StatusWriter } from './status-writer.js';
import { ModelWorkloads, type WorkloadOptions } from './workloads.js';

export type { ReplicaScaler } from './workloads.js';

export { MODEL_FINALIZER };

/** What the reconciler is given; each part takes its own share (workloads.ts, routes.ts). */
export interface ModelControllerDeps extends WorkloadOptions, Omit<RouteOptions, 'runtime'> {
  models: ResourceSource<Model>;
  credentials: CredentialsResolver;
  /** Where the names kept for deleted Models' namespaces outlive this process. */
  keptNames: KeptNameStore;
  /** Why a namespace's pods would get no sidecar (none: the runtime guards them itself, standalone). */
  sidecarPlacement?: SidecarPlacement;
  /** A version's figures at the gateways over a span, for spec.rollout's analysis. */
  figures: FiguresOf;
}

/**
 * Model → checked settings → runtime (Deployment + Service) → routes → status. Level-triggered:
 * every pass recomputes everything from the Model, the storage folder and the runtime's state.
 * This file is the pass itself, its finalizer and the ownership of names; each step is a part
 * that owns its own state (as KServe's sub-reconcilers): the folder checks (folder-checks.ts),
 * the workloads (workloads.ts), the routes (routes.ts), the rollout (rollout-judge.ts) and the
 * status (status-writer.ts).
 */
export class ModelReconciler implements Reconciler {
  readonly name = 'model';
  private readonly folders: FolderChecks;
  private readonly workloads: ModelWorkloads;
  private readonly routes: ModelRoutes;
  private readonly rollouts: RolloutJudge;
  private readonly status: StatusWriter;
  private readonly owners: NameOwnership;
  /** Workflows of Models deleted without the finalizer, to clean their routes. */
  private readonly tombstones = new Map<string, string | undefined>();

  /** Models, and the runtime's workloads (a Deployment's readiness changes its Model's status). */
  readonly watches: Watches<Model>;

  constructor(private readonly deps: ModelControllerDeps) {
    this.folders = new FolderChecks(deps.credentials);
    this.workloads = new ModelWorkloads(deps);
    this.routes = new ModelRoutes(deps);
    this.rollouts = new RolloutJudge(deps.figures);
    this.owners = new NameOwnership(deps.models, deps.keptNames);
    this.status = new StatusWriter(deps.models, this.owners.names, deps.events);
    this.watches = {
      for: deps.models,
      // Its own status writes wake nothing: the next look is the pass's own requeue, or a change.
      changed: specOrMetadataChanged,
      onDeleted: (ref, gone) => this.noteDeleted(ref, gone),
      owns: [
        this.folders.turns,
        this.owners.waiters,
        deps.runtime,
        ...(deps.scaler === undefined ? [] : [deps.scaler]),
        deps.workflows.watch((id) =>
          deps.models
            .list()
            .filter((m) => m.spec.workflow === id)
            .map((m) => ({ namespace: m.metadata.namespace ?? 'default', name: m.metadata.name })),
        ),
      ],
      workers: 8,
    };
  }

  /** The source's onChange: remembers what a deleted Model was routed under. */
  noteDeleted(ref: ResourceRef, model: Model | undefined): void {
    if (model) this.tombstones.set(refKey(ref), model.spec.workflow);
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    try {
      await this.owners.loaded();
      const ref = parseRefKey(key);
      const model = await this.finalized(key, ref);
      if (model === undefined) return undefined;
      const refused = await this.refused(key, model);
      if (refused !== false) return refused;
      return await this.serve(key, model);
    } finally {
      // Whatever path it took: a turn at checking stores free now goes to the next in line (a
      // Model woken for one may have needed none, or be gone).
      this.folders.done(key);
    }
  }

  /**
   * The Model with this controller's finalizer on, or undefined when it is gone or going: then
   * nothing of it is served any more, and its name is released (kept for its namespace a while).
   */
  private async finalized(key: string, ref: ResourceRef): Promise<Model | undefined> {
    const { models } = this.deps;
    const model = models.get(ref);
    if (!model) {
      // Gone without the finalizer's pass: a standalone manifest is deleted at once, and a cluster
      // Model may have lost its finalizer by hand. Either way nothing may keep serving it.
      await this.tearDown(ref, this.tombstones.get(key));
      this.tombstones.delete(key);
      this.forget(key);
      this.owners.wake(ref);
      return undefined;
    }
    const finalizers = model.metadata.finalizers ?? [];
    if (model.metadata.deletionTimestamp) {
      // Its finalizer taken off by hand: still nothing of it is served, and a foreground deletion
      // waits for its Services, which wait for their release.
      if (!finalizers.includes(MODEL_FINALIZER)) {
        await this.tearDown(ref, model.spec.workflow);
        return undefined;
      }
      const kept = await this.owners.release(model);
      await this.tearDown(ref, model.spec.workflow);
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
      // Those waiting learn now that the name is kept, and take it when its time is up.
      this.owners.wake(ref, kept?.until);
      return undefined;
    }
    if (finalizers.includes(MODEL_FINALIZER)) return model;
    const updated = await withConflictRetry(
      model,
      () => models.read(ref),
      (m) => models.updateFinalizers(m, [...(m.metadata.finalizers ?? []), MODEL_FINALIZER]),
      isConflict,
    );
    // A new Model of a name others wait for (one made again where the name is kept): they are
    // told whom it is kept for now.
    if (updated) this.owners.wake(ref);
    return updated;
  }

  /**
   * Why the Model cannot be served as it stands (versions the API server never checked, a name
   * another namespace holds, a sidecar its namespace cannot have), told in its status; false when
   * nothing stands in its way.
   */
  private async refused(key: string, model: Model): Promise<ReconcileResult | false> {
    const ref = parseRefKey(key);
    const problems = versionProblems(ref.name, model.spec);
    if (problems.length > 0) {
      // Only a manifest the API server never checked gets here: what runs stays as it was.
      await this.status.write(model, (m, now) =>
        invalidVersionsStatus(m, problems.map((p) => `${p.field}: ${p.message}`).join('; '), now),
      );
      return undefined;
    }
    const holder = this.owners.holder(model);
    if (holder !== undefined) {
      // Nothing of this Model runs or is routed (the holder's route is another source's: kept).
      // Once per process: nothing makes any of it again while the Model is refused.
      if (this.owners.leftovers(key)) {
        await this.tearDown(ref, model.spec.workflow);
        this.routes.dropped(key);
        this.owners.clearedLeftovers(key);
      }
      await this.status.write(model, (m, now) => nameTakenStatus(m, holder, now));
      return { requeueAfterMs: this.owners.recheckMs(holder) };
    }
    this.owners.forget(key);
    const unplaced =
      this.workloads.gatewayOf(model) === 'sidecar' ? this.deps.sidecarPlacement?.(ref.namespace) : undefined;
    if (unplaced !== undefined) {
      // What runs stays as it was (a Model turned from central to sidecar here keeps serving).
      await this.status.write(model, (m, now) => sidecarUnavailableStatus(m, unplaced, now));
      return undefined;
    }
    return false;
  }

  /** Each version of the spec checked, run and routed; removed ones drained; the status written. */
  private async serve(key: string, model: Model): Promise<ReconcileResult> {
    const ref = parseRefKey(key);
    const rollout = await this.rollouts.step(model, key);
    // The rollout's step sets the canary's share (or promotes it) without touching the spec.
    const versions = servedVersions(ref.name, effectiveSpec(model.spec, rollout?.status));
    const observed = await this.folders.observeAll(model, versions, key);
    // No turn free: woken when one is (and looked at again after RECHECK_MS whatever happens),
    // and until then what runs stays as it is.
    if (observed === undefined) return { requeueAfterMs: RECHECK_MS };
    const results: VersionResult[] = [];
    for (const [i, version] of versions.entries()) {
      const obs = observed[i];
      if (obs === undefined) continue;
      await this.workloads.apply(model, version, obs);
      results.push({ version, obs });
    }
    const wanted = new Set(results.map((r) => r.version.workload));
    this.folders.keepOnly(key, wanted);
    const stale = this.workloads.stale(ref, wanted);
    const routed = await this.routes.sync(model, results, stale.length > 0);
    const draining = await this.workloads.drain(ref, stale, routed);
    await this.routes.releaseUnrouted(ref);
    await this.status.write(model, (m, now) =>
      desiredStatus(m, results, draining.versions, now, rollout?.status),
    );
    if (rollout?.event !== undefined) {
      const { type, reason, message } = rollout.event;
      await this.deps.events.record(
        { ...model, apiVersion: MODEL_API_VERSION, kind: MODEL_KIND },
        type,
        reason,
        message,
      );
    }
    // A refused workload is tried again too: a quota may have room by then.
    const wrong = results.some(
      (r) =>
        r.obs.kind !== 'settings' || !r.obs.check.ok || r.obs.runtime?.failure?.reason === 'WorkloadRejected',
    );
    const next = Math.min(wrong ? RECHECK_MS : Infinity, draining.nextMs, rollout?.recheckMs ?? Infinity);
    return next === Infinity ? undefined : { requeueAfterMs: next };
  }

  /** The route keys this controller currently holds. */
  liveRoutes(): string[] {
    return this.routes.live();
  }

  keyOf(source: string): string | undefined {
    return sourceKey('model', source);
  }

  /** Nothing of the Model is routed or runs, and the addresses it held are let go: in that order. */
  private async tearDown(ref: ResourceRef, workflow: string | undefined): Promise<void> {
    await this.routes.remove(ref, workflow);
    await this.workloads.removeAll(ref);
    await this.routes.releaseUnrouted(ref);
  }

  private forget(key: string): void {
    this.folders.forget(key);
    this.owners.forget(key);
    this.routes.forget(key);
    this.rollouts.forget(key);
    this.workloads.forget(parseRefKey(key));
  }
}
