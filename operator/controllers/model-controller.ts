import { isTollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { checkModelFolder, type FolderCheck } from '../../common/model-settings/check-folder.js';
import { redisKeys } from '../../common/redis/schema.js';
import { modelAccount, modelRouteSource, type Route } from '../../common/resources/grant.js';
import { OWNER_KEY } from '../../common/resources/labels.js';
import {
  DEFAULT_MLFLOW_IMAGE,
  DEFAULT_SKLEARN_IMAGE,
  MODEL_API_VERSION,
  MODEL_KIND,
  type Model,
  type ModelGateway,
  type ModelStatus,
} from '../../common/resources/model.js';
import type { RouteWriter } from '../../common/routes/workflow-routes.js';
import type { EventRecorder } from '../events.js';
import type { RuntimeDriver, RuntimePlan, RuntimeState } from '../serving/runtime-driver.js';
import { NameWaiters } from './name-waiters.js';
import { ModelNames } from './model-names.js';
import { serviceSource } from './workflow-service-controller.js';
import { SERVICE_LABEL } from '../../common/resources/labels.js';
import type { KeptNameStore } from './kept-names.js';
import type { StartingReplica } from '../serving/starting-replicas.js';
import {
  ConflictError,
  parseRefKey,
  refKey,
  sourceKey,
  type ResourceRef,
  type ResourceSource,
} from '../framework/resource-source.js';
import type { CredentialsResolver } from '../storage/credentials.js';
import { openStore } from '../storage/open-store.js';
import {
  withConflictRetry,
  type OwnedSource,
  type ReconcileResult,
  type Reconciler,
  type Watches,
} from '../framework/controller.js';
import type { WorkflowAdmission } from '../workflows/workflow-admission.js';
import type { SidecarPlacement } from '../webhook/sidecar-placement.js';
import {
  boundedMessages,
  desiredStatus,
  invalidVersionsStatus,
  nameTakenStatus,
  sameStatus,
  sidecarUnavailableStatus,
  type DrainingVersion,
  type Observation,
  type VersionResult,
} from './model-status.js';
import {
  servedVersions,
  versionProblems,
  type ServedVersion,
} from '../../common/resources/model-versions.js';
import { scalingOf } from '../../common/resources/model-scaling.js';
import type { VersionFigures } from '../../common/redis/version-figures.js';
import { CheckTurns } from '../storage/check-turns.js';
import {
  advanceRollout,
  checkEveryMs,
  effectiveSpec,
  rolloutRevision,
  type RolloutStatus,
  type RolloutStep,
} from './model-rollout.js';

export const MODEL_FINALIZER = 'tollgate.dev/model-routes';
/** How often a Model whose folder is wrong looks again (the fix may be an upload, not an edit). */
const RECHECK_MS = 30_000;
/**
 * How often a Model refused for its name looks again whether the holder is gone, besides being
 * woken when it goes (name-waiters.ts): a safety net, not the way it learns.
 */
const NAME_RECHECK_MS = 60_000;
/** A Model waiting for a name kept for a deleted holder's namespace looks again this long after its end. */
const KEPT_NAME_GRACE_MS = 100;
/**
 * How long a version removed from the spec keeps running once out of the routes: every gateway
 * drops the route within a pub/sub message (or a 1 s missing-route cache), and the calls it was
 * already given finish.
 */
const DRAIN_MS = 15_000;
/** A cold entry's starting replicas, when it has some. */
const listedStarting = (state: RuntimeState): { starting?: StartingReplica[] } =>
  state.starting === undefined || state.starting.length === 0 ? {} : { starting: state.starting };

/** The address of a cold route entry whose runtime has none while at zero (a reserved name). */
const NO_ADDRESS_YET = 'http://scaled-to-zero.invalid';
/** Storage errors a user fixes (wrong bucket, missing secret): a condition, not a retry storm. */
const USER_STORAGE_ERRORS: Record<string, string> = {
  no_such_bucket: 'NoSuchBucket',
  no_such_folder: 'NoSuchFolder',
  access_denied: 'AccessDenied',
  credentials_not_found: 'CredentialsNotFound',
  credentials_not_readable: 'CredentialsNotReadable',
  credentials_required: 'CredentialsRequired',
  credentials_not_allowed: 'CredentialsNotAllowed',
  storage_not_allowed: 'StorageNotAllowed',
  invalid_storage_uri: 'InvalidStorageUri',
  object_vanished: 'ObjectVanished',
  folder_too_large: 'FolderTooLarge',
  file_too_large: 'FileTooLarge',
};

/** How long one check of a Model's folder (its listing and settings) may take, all told. */
const STORAGE_CHECK_MS = 20_000;
/**
 * A folder whose check failed is checked again after RECHECK_MS, then twice as long each time, up
 * to this: the store is the Model's author's choice, and one that answers slowly and wrongly must
 * not hold the workers every team's Models share, on every pass.
 */
const MAX_RECHECK_MS = 240_000;
/** The first wait after a check that could not be made (the store down or past its deadline). */
const ERROR_RECHECK_MS = 5_000;
/** Reconciles of one namespace's Models that may be checking stores at once (storage/check-turns.ts). */
const CHECKS_PER_NAMESPACE = 2;

/** One workload's last folder check, for a generation of its Model's spec. */
type FolderChecked = { stamp: string; retryAt?: number; failures?: number } & (
  { obs: Observation } | { error: unknown }
);

export interface ModelControllerDeps {
  models: ResourceSource<Model>;
  runtime: RuntimeDriver;
  routes: Pick<RouteWriter, 'put' | 'remove' | 'removeAllOf'>;
  events: EventRecorder;
  credentials: CredentialsResolver;
  log: Logger;
  /** Whether a Model's namespace may serve its spec.workflow, and the workflow's owner. */
  workflows: WorkflowAdmission;
  /** Where the names kept for deleted Models' namespaces outlive this process. */
  keptNames: KeptNameStore;
  /** Replaces both default images (an image built from images/mlserver serves both kinds). */
  runtimeImage?: string;
  /** Where a Model's calls are checked when its spec does not say. */
  defaultGateway?: ModelGateway;
  /** Why a namespace's pods would get no sidecar (none: the runtime guards them itself, standalone). */
  sidecarPlacement?: SidecarPlacement;
  /** Replicas of Models with spec.scaling (without it, such Models run their minimum). */
  scaler?: ReplicaScaler;
  /** A version's figures at the gateways over a span, for spec.rollout's analysis. */
  figures: (model: string, version: string, fromMs: number, toMs: number) => Promise<VersionFigures>;
}

/** Where the replicas of an autoscaled version come from; its decisions enqueue the Model. */
export interface ReplicaScaler extends OwnedSource {
  replicasFor(model: Model, version: ServedVersion): number;
  noteStarting(model: Model, version: ServedVersion): void;
  forget(ref: ResourceRef): void;
}

const isConflict = (e: unknown) => e instanceof ConflictError;
const routeSource = (ref: ResourceRef) => modelRouteSource(ref.namespace, ref.name);

/**
 * Model → checked settings → runtime (Deployment + Service) → routes → status. Level-triggered:
 * every pass recomputes everything from the Model, the storage folder and the runtime's state.
 */
export class ModelReconciler implements Reconciler {
  readonly name = 'model';
  /** The valid folder check of each Model's current uid+generation: storage is read once per spec, not per pod change. */
  /**
   * Each Model's workloads' last folder checks, for its generation: a good one until the spec
   * changes, a failed one (or one that could not be made) until `retryAt`, backing off with
   * `failures`.
   */
  private readonly checked = new Map<string, Map<string, FolderChecked>>();
  /** Turns at checking stores, by namespace: the workers are every team's. */
  private readonly turns = new CheckTurns(CHECKS_PER_NAMESPACE);
  /**
   * Each Model's workflow, the route keys it holds and the addresses they name: drops the old bda
   * route when the workflow changes, tells the sweep what is live, and keeps those addresses held.
   */
  private readonly routed = new Map<
    string,
    { workflow: string | undefined; keys: string[]; urls: string[] }
  >();
  private keptNamesLoad: Promise<void> | undefined;
  /** Models whose every workflow route this process knows (releaseUnrouted). */
  private readonly swept = new Set<string>();
  /** Since when each removed version's workload (by namespace/workload) has been draining. */
  private readonly draining = new Map<string, number>();
  /** Why each Model's workflow route was refused, last told (told again only when it changes). */
  private readonly workflowRefusals = new Map<string, string>();
  /** Workflows of Models deleted without the finalizer, to clean their routes. */
  private readonly tombstones = new Map<string, string | undefined>();
  /** Which namespace holds each model name. */
  private readonly names = new ModelNames(MODEL_FINALIZER);
  /** Wakes Models waiting for a name when it may have come free. */
  private readonly waiters: NameWaiters;
  /** Models refused for their name whose leftovers this process has torn down (once is enough). */
  private readonly nameRefused = new Set<string>();
  /**
   * Each Model's last rollout judgement and when it was made. This operator is the only writer of
   * status.rollout, so its own last word is newer than a cached status that may not have seen the
   * write yet; and judged at most once per check interval, a status write starts no loop.
   */
  private readonly rolloutJudged = new Map<string, { at: number; status: RolloutStatus }>();

  /** Models, and the runtime's workloads (a Deployment's readiness changes its Model's status). */
  readonly watches: Watches<Model>;

  constructor(private readonly deps: ModelControllerDeps) {
    this.waiters = new NameWaiters(deps.models);
    this.watches = {
      for: deps.models,
      onDeleted: (ref, gone) => this.noteDeleted(ref, gone),
      owns: [
        this.turns,
        this.waiters,
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

  /**
   * The names an earlier process kept for deleted Models' namespaces, read once before any Model
   * is reconciled; while Redis cannot be read, every reconcile fails and is retried (the other
   * controllers run on).
   */
  private keptNamesLoaded(): Promise<void> {
    this.keptNamesLoad ??= this.deps.keptNames.load().then(
      (all) => {
        for (const kept of all) this.names.restore(kept);
      },
      (e: unknown) => {
        this.keptNamesLoad = undefined;
        throw e;
      },
    );
    return this.keptNamesLoad;
  }

  /** The source's onChange: remembers what a deleted Model was routed under. */
  noteDeleted(ref: ResourceRef, model: Model | undefined): void {
    if (model) this.tombstones.set(refKey(ref), model.spec.workflow);
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    try {
      return await this.reconcileModel(key);
    } finally {
      // Whatever path it took: a turn at checking stores free now goes to the next in line (a
      // Model woken for one may have needed none, or be gone).
      this.turns.done(parseRefKey(key).namespace, key);
    }
  }

  private async reconcileModel(key: string): Promise<ReconcileResult> {
    await this.keptNamesLoaded();
    const ref = parseRefKey(key);
    const { models, runtime } = this.deps;
    let model = models.get(ref);
    if (!model) {
      // Gone without the finalizer's pass: a standalone manifest is deleted at once, and a cluster
      // Model may have lost its finalizer by hand. Either way nothing may keep serving it.
      await this.tearDown(ref, this.tombstones.get(key));
      this.tombstones.delete(key);
      this.forget(key);
      this.waiters.wake(ref.name, ref);
      return undefined;
    }
    if (model.metadata.deletionTimestamp) {
      // Its finalizer taken off by hand: still nothing of it is served, and a foreground deletion
      // waits for its Services, which wait for their release.
      if (!(model.metadata.finalizers ?? []).includes(MODEL_FINALIZER)) {
        await this.tearDown(ref, model.spec.workflow);
        return undefined;
      }
      // Kept where the next operator finds it, before the Model (and this pass) can be gone.
      const kept = this.names.release(models.list(), model);
      if (kept !== undefined) await this.deps.keptNames.keep(kept);
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
      this.waiters.wake(ref.name, ref, kept === undefined ? undefined : kept.until + KEPT_NAME_GRACE_MS);
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
      // A new Model of a name others wait for (one made again where the name is kept): they are
      // told whom it is kept for now.
      this.waiters.wake(ref.name, ref);
    }

    const problems = versionProblems(ref.name, model.spec);
    if (problems.length > 0) {
      // Only a manifest the API server never checked gets here: what runs stays as it was.
      await this.writeStatus(model, (m, now) =>
        invalidVersionsStatus(m, problems.map((p) => `${p.field}: ${p.message}`).join('; '), now),
      );
      return undefined;
    }
    const holder = this.names.holder(models.list(), model);
    if (holder !== undefined) {
      // Nothing of this Model runs or is routed (the holder's route is another source's: kept).
      // Once per process: nothing makes any of it again while the Model is refused.
      if (!this.nameRefused.has(key)) {
        await this.tearDown(ref, model.spec.workflow);
        this.routed.delete(key);
        this.nameRefused.add(key);
      }
      await this.writeStatus(model, (m, now) => nameTakenStatus(m, holder, now));
      const keptFor =
        holder.keptUntil === undefined ? NAME_RECHECK_MS : holder.keptUntil.getTime() - Date.now();
      return { requeueAfterMs: Math.min(NAME_RECHECK_MS, Math.max(0, keptFor) + KEPT_NAME_GRACE_MS) };
    }
    this.nameRefused.delete(key);
    const unplaced =
      this.gatewayOf(model) === 'sidecar' ? this.deps.sidecarPlacement?.(ref.namespace) : undefined;
    if (unplaced !== undefined) {
      // What runs stays as it was (a Model turned from central to sidecar here keeps serving).
      await this.writeStatus(model, (m, now) => sidecarUnavailableStatus(m, unplaced, now));
      return undefined;
    }
    const rollout = await this.rolloutStep(model, key);
    // The rollout's step sets the canary's share (or promotes it) without touching the spec.
    const serving = effectiveSpec(model.spec, rollout?.status);
    const results: VersionResult[] = [];
    const versions = servedVersions(ref.name, serving);
    // Each version's folder is checked at once: a reconcile waits for the slowest store, not for
    // the sum of them.
    // Every check settles before the pass goes on or fails, so none is still running when the next
    // pass would start it again.
    const asks = versions.some((version) => this.lastCheck(model, version, Date.now()) === undefined);
    // No turn free: woken when one is (and looked at again after RECHECK_MS whatever happens),
    // and until then what runs stays as it is.
    if (asks && !this.turns.take(ref.namespace, key)) return { requeueAfterMs: RECHECK_MS };
    let settled: Array<PromiseSettledResult<Observation>>;
    try {
      settled = await Promise.allSettled(versions.map((version) => this.observe(model, version)));
    } finally {
      if (asks) this.turns.give(ref.namespace);
    }
    const observed: Observation[] = [];
    for (const result of settled) {
      if (result.status === 'rejected') throw result.reason;
      observed.push(result.value);
    }
    for (const [i, version] of versions.entries()) {
      const obs = observed[i] as Observation;
      if (obs.kind === 'settings' && obs.check.ok) {
        const plan = this.plan(model, version, obs.check);
        obs.runtime = await runtime.apply(plan);
        obs.cold = plan.replicas === 0 && scalingOf(model.spec)?.minReplicas === 0;
        if (plan.replicas > 0 && obs.runtime.readyReplicas === 0)
          this.deps.scaler?.noteStarting(model, version);
      } else {
        await runtime.remove({ namespace: ref.namespace, name: version.workload }, ref.name);
      }
      results.push({ version, obs });
    }
    // Workloads serving no version of the spec (removed versions, or the unnamed one replaced).
    const wanted = new Set(results.map((r) => r.version.workload));
    const checks = this.checked.get(key);
    for (const workload of checks?.keys() ?? []) if (!wanted.has(workload)) checks?.delete(workload);
    const stale = this.deps.runtime.workloads(ref).filter((w) => !wanted.has(w));
    const routed = await this.syncRoutes(model, results, stale.length > 0);
    const draining = await this.drain(ref, stale, routed);
    await this.releaseUnrouted(ref);
    await this.writeStatus(model, (m, now) =>
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

  /**
   * Where spec.rollout stands now: judged at most once per check interval while a step runs (its
   * own status write wakes this reconciler again, and would otherwise judge it in a loop).
   */
  private async rolloutStep(model: Model, key: string): Promise<RolloutStep | undefined> {
    const { spec, status } = model;
    if (spec.rollout === undefined) {
      this.rolloutJudged.delete(key);
      return undefined;
    }
    const last = this.rolloutJudged.get(key);
    const previous = last?.status ?? status?.rollout;
    const now = Date.now();
    const every = checkEveryMs(spec);
    if (
      last !== undefined &&
      now < last.at + every &&
      previous?.phase === 'Progressing' &&
      previous.revision === rolloutRevision(spec)
    )
      return { status: previous, recheckMs: last.at + every - now };
    const canary = spec.rollout.version;
    const canaryReady = (status?.versions ?? []).some((v) => v.name === canary && v.phase === 'Ready');
    const step = await advanceRollout(
      spec,
      previous,
      canaryReady,
      (version, from, to) =>
        this.deps.figures(
          modelAccount(model.metadata.namespace ?? 'default', model.metadata.name),
          version,
          from,
          to,
        ),
      now,
    );
    if (step === undefined) this.rolloutJudged.delete(key);
    else this.rolloutJudged.set(key, { at: now, status: step.status });
    return step;
  }

  /**
   * Workloads of versions no longer in the spec: out of the routes already (syncRoutes ran), they
   * keep running for the drain window so the calls they were given finish, then go. While no
   * version of the spec serves yet (a Model just given versions), they still take the calls and
   * wait: the drain begins once the new ones serve.
   */
  private async drain(
    ref: ResourceRef,
    stale: string[],
    serving: boolean,
  ): Promise<{ versions: DrainingVersion[]; nextMs: number }> {
    const versions: DrainingVersion[] = [];
    let nextMs = Infinity;
    const now = Date.now();
    for (const workload of stale) {
      const name = workload === ref.name ? '' : workload.slice(ref.name.length + 1);
      const key = refKey({ namespace: ref.namespace, name: workload });
      if (!serving) {
        versions.push({ name, serving: true });
        continue;
      }
      const since = this.draining.get(key) ?? now;
      this.draining.set(key, since);
      const left = since + DRAIN_MS - now;
      if (left <= 0) {
        await this.deps.runtime.remove({ namespace: ref.namespace, name: workload }, ref.name);
        this.draining.delete(key);
        continue;
      }
      versions.push({ name, serving: false });
      nextMs = Math.min(nextMs, left);
    }
    return { versions, nextMs };
  }

  private plan(model: Model, version: ServedVersion, check: Extract<FolderCheck, { ok: true }>): RuntimePlan {
    const override = model.spec.runtime?.implementation;
    let settings = override ? { ...check.settings, implementation: override } : check.settings;
    // MLServer then answers with model_version, and serves /v2/models/<m>/versions/<v>/... itself.
    if (version.name !== undefined)
      settings = { ...settings, parameters: { ...settings.parameters, version: version.name } };
    const image =
      model.spec.runtime?.image ??
      this.deps.runtimeImage ??
      (check.generated ? DEFAULT_MLFLOW_IMAGE : DEFAULT_SKLEARN_IMAGE);
    return {
      model,
      workload: version.workload,
      version: version.name,
      storageUri: version.storageUri,
      replicas: this.replicasFor(model, version),
      settings,
      settingsGenerated: check.generated || override !== undefined || version.name !== undefined,
      image,
      gateway: this.gatewayOf(model),
    };
  }

  private gatewayOf(model: Model): ModelGateway {
    return model.spec.gateway ?? this.deps.defaultGateway ?? 'central';
  }

  private replicasFor(model: Model, version: ServedVersion): number {
    const policy = scalingOf(model.spec);
    if (policy === undefined) return model.spec.replicas ?? 1;
    return this.deps.scaler?.replicasFor(model, version) ?? policy.minReplicas;
  }

  /** The version's last folder check while it still stands (undefined: the store is asked again). */
  private lastCheck(model: Model, version: ServedVersion, now: number): FolderChecked | undefined {
    const { namespace = 'default', name } = model.metadata;
    const cached = this.checked.get(refKey({ namespace, name }))?.get(version.workload);
    const stamp = `${model.metadata.uid}:${model.metadata.generation}`;
    return cached?.stamp === stamp && (cached.retryAt === undefined || now < cached.retryAt)
      ? cached
      : undefined;
  }

  private async observe(model: Model, version: ServedVersion): Promise<Observation> {
    const { namespace = 'default', name } = model.metadata;
    const modelKey = refKey({ namespace, name });
    const checks = this.checked.get(modelKey) ?? new Map<string, FolderChecked>();
    this.checked.set(modelKey, checks);
    const stamp = `${model.metadata.uid}:${model.metadata.generation}`;
    const started = Date.now();
    const standing = this.lastCheck(model, version, started);
    if (standing !== undefined) {
      // A store that could not be asked (it hung, it failed) is not asked again before its time:
      // the reconcile fails as it did, without holding a worker for the store's deadline.
      if ('error' in standing) throw standing.error;
      return { ...standing.obs };
    }
    const cached = checks.get(version.workload);
    // Counted from when this check starts, so the pass RECHECK_MS after a failure checks again.
    const backOff = (firstMs: number) => {
      const failures = cached?.stamp === stamp ? (cached.failures ?? 0) + 1 : 1;
      return { stamp, failures, retryAt: started + Math.min(firstMs * 2 ** (failures - 1), MAX_RECHECK_MS) };
    };
    const failed = (obs: Observation): Observation => {
      checks.set(version.workload, { ...backOff(RECHECK_MS), obs });
      return { ...obs };
    };
    try {
      const env = await this.deps.credentials.envFor(
        namespace,
        model.spec.credentials?.secretName,
        version.storageUri,
        model.metadata.annotations?.[OWNER_KEY],
      );
      const refusedAddress = this.deps.credentials.refusedAddress;
      const store = openStore(
        version.storageUri,
        env,
        refusedAddress === undefined ? {} : { refusedAddress },
      );
      // The author chose the store: its answers are bounded in size and time (storage/limits.ts).
      const deadline = AbortSignal.timeout(STORAGE_CHECK_MS);
      const files = (await store.list(deadline)).map((o) => o.path);
      const check = await checkModelFolder({ files, read: (p) => store.readText(p, deadline) }, name);
      if (!check.ok) return failed({ kind: 'settings', check });
      checks.set(version.workload, { stamp, obs: { kind: 'settings', check } });
      return { kind: 'settings', check };
    } catch (e) {
      const reason = isTollgateError(e) ? USER_STORAGE_ERRORS[e.code] : undefined;
      if (reason !== undefined && isTollgateError(e))
        return failed({ kind: 'storage-error', reason, message: e.message });
      // Not the author's to fix (a store down, a deadline passed): what runs keeps running, and the
      // check is made again after the same backoff.
      checks.set(version.workload, { ...backOff(ERROR_RECHECK_MS), error: e });
      throw e;
    }
  }

  /**
   * The model's route while any version has a ready replica: its URL is the default version's (or
   * the ready version with most traffic), and a versioned Model lists each ready version with the
   * share of unversioned inference calls it takes. One Redis value, so a shift is atomic.
   * `replacing`: a workload of this Model outside the spec still runs (its route is kept while
   * nothing of the spec serves). Resolves with whether a version of the spec is routed.
   */
  private async syncRoutes(model: Model, results: VersionResult[], replacing: boolean): Promise<boolean> {
    const ref = { namespace: model.metadata.namespace ?? 'default', name: model.metadata.name };
    const key = refKey(ref);
    const workflow = model.spec.workflow;
    const previous = this.routed.get(key)?.workflow;
    if (previous !== undefined && previous !== workflow) {
      await this.deps.routes.remove(redisKeys.bdaRoute(previous, ref.name), routeSource(ref));
    }
    // A version scaled to zero stays routed, marked cold: the gateway holds its calls while the
    // autoscaler starts a replica.
    const policy = scalingOf(model.spec);
    const waits = policy?.minReplicas === 0;
    const ready = results.flatMap((r) => {
      if (r.obs.kind !== 'settings' || r.obs.runtime === undefined) return [];
      const runtime = { ...r.obs.runtime, url: r.obs.runtime.routeUrl ?? r.obs.runtime.url };
      // Served, and with an address (a Service made again has none for a moment).
      if (runtime.readyReplicas > 0 && runtime.url !== '')
        return [{ version: r.version, state: runtime, cold: false }];
      // At zero or starting from it: calls wait for the replica rather than being refused.
      if (!waits || runtime.failure !== undefined) return [];
      // A local runtime at zero has no address until it starts again; the gateway calls a cold
      // entry's address only once the route says it is warm.
      return [{ version: r.version, state: { ...runtime, url: runtime.url || NO_ADDRESS_YET }, cold: true }];
    });
    const shadowSpec = model.spec.shadow;
    // A shadow's answers are never returned: it never stands in for the default.
    const candidates =
      shadowSpec === undefined ? ready : ready.filter((r) => r.version.name !== shadowSpec.version);
    const main =
      candidates.find((r) => r.version.isDefault && !r.cold) ??
      [...candidates].sort(
        (a, b) => Number(a.cold) - Number(b.cold) || b.version.percent - a.version.percent,
      )[0];
    // A shadow at zero stays routed, marked cold: a drawn copy wakes it and is dropped.
    const shadow =
      shadowSpec === undefined ? undefined : ready.find((r) => r.version.name === shadowSpec.version);
    if (main === undefined) {
      // Nothing of the spec serves yet, but a replaced workload does: its route stays until then.
      if (replacing && this.routed.get(key)?.keys.length) return false;
      await this.removeRoutes(ref, workflow);
      return false;
    }
    // The workflow's route only where its Workflow record admits the Model's namespace, with the
    // record's owner: a tenant's Model cannot join another team's workflow by naming it.
    const owner = workflow ? await this.workflowOwner(model, workflow) : undefined;
    if (workflow && owner === undefined)
      await this.deps.routes.remove(redisKeys.bdaRoute(workflow, ref.name), routeSource(ref));
    const versioned = main.version.name !== undefined;
    const route: Route = {
      url: main.state.url,
      source: routeSource(ref),
      // Only where the record admits it: the route's workflow is what lets that workflow's bda
      // keys call the model, so a tenant's Model cannot pose as a service of another's workflow.
      ...(workflow && owner !== undefined ? { workflow } : {}),
      ...(owner ? { owner } : {}),
      ...(main.state.grantAudience === undefined ? {} : { grantAudience: main.state.grantAudience }),
      ...(main.cold ? { cold: true, ...listedStarting(main.state) } : {}),
      ...(waits && policy !== undefined
        ? { activationTimeoutSeconds: Math.round(policy.activationTimeoutMs / 1000) }
        : {}),
      ...(model.spec.logging === undefined ? {} : { logging: payloadLogging(model.spec.logging) }),
      ...(shadow === undefined || shadowSpec === undefined
        ? {}
        : {
            shadow: {
              name: shadowSpec.version,
              url: shadow.state.url,
              percent: shadowSpec.percent ?? 100,
              ...(shadow.cold ? { cold: true } : {}),
            },
          }),
      ...(versioned
        ? {
            versions: ready.map((r) => ({
              name: r.version.name ?? '',
              url: r.state.url,
              percent: r.version.percent,
              ...(r.cold ? { cold: true, ...listedStarting(r.state) } : {}),
            })),
          }
        : {}),
    };
    const keys = [
      redisKeys.modelRoute(ref.name),
      ...(workflow && owner !== undefined ? [redisKeys.bdaRoute(workflow, ref.name)] : []),
    ];
    for (const k of keys) await this.deps.routes.put(k, route);
    const urls = [route.url, ...(route.versions ?? []).map((v) => v.url), route.shadow?.url ?? ''];
    this.routed.set(key, { workflow, keys, urls });
    return true;
  }

  /** The owner of the Model's workflow if its record admits the Model's namespace; else it is told why. */
  private async workflowOwner(model: Model, workflow: string): Promise<string | undefined> {
    const ref = { namespace: model.metadata.namespace ?? 'default', name: model.metadata.name };
    const admission = this.deps.workflows.admit(workflow, ref.namespace);
    if (admission.admitted) {
      this.workflowRefusals.delete(refKey(ref));
      return admission.owner;
    }
    if (this.workflowRefusals.get(refKey(ref)) !== admission.message) {
      this.workflowRefusals.set(refKey(ref), admission.message);
      this.deps.log.warn({ model: refKey(ref), reason: admission.reason }, admission.message);
      await this.deps.events.record(
        { ...model, apiVersion: MODEL_API_VERSION, kind: MODEL_KIND },
        'Warning',
        admission.reason,
        `not routed under workflow '${workflow}': ${admission.message}`,
      );
    }
    return undefined;
  }

  /** The route keys this controller currently holds. */
  liveRoutes(): string[] {
    return [...this.routed.values()].flatMap((r) => r.keys);
  }

  keyOf(source: string): string | undefined {
    return sourceKey('model', source);
  }

  /** Its routes: the model's own, and under `workflow` and the workflow it was last routed under. */
  private async removeRoutes(ref: ResourceRef, workflow: string | undefined): Promise<void> {
    const key = refKey(ref);
    const before = this.routed.get(key)?.workflow;
    await this.deps.routes.remove(redisKeys.modelRoute(ref.name), routeSource(ref));
    for (const w of new Set([workflow, before]))
      if (w) await this.deps.routes.remove(redisKeys.bdaRoute(w, ref.name), routeSource(ref));
    this.routed.set(key, { workflow, keys: [], urls: [] });
  }

  /** Nothing of the Model is routed or runs, and the addresses it held are let go: in that order. */
  private async tearDown(ref: ResourceRef, workflow: string | undefined): Promise<void> {
    await this.removeRoutes(ref, workflow);
    await this.removeWorkloads(ref);
    await this.releaseUnrouted(ref);
  }

  /**
   * Lets go of the addresses of the Model's workloads being deleted that no Model's route names.
   * The first time in this process, every workflow route the Model's source wrote and does not
   * hold now goes before: an earlier process may have written one this one never heard of (its
   * spec.workflow changed while no operator ran). A Service also labelled as a workflow service
   * (relabelled by its team) has that source's routes removed too, whichever controller runs first.
   */
  private async releaseUnrouted(ref: ResourceRef): Promise<void> {
    const held = this.deps.runtime.held(ref);
    if (held.length === 0) return;
    const routed = new Set([...this.routed.values()].flatMap((r) => r.urls.map(hostOf)));
    const due = held.filter((h) => !h.addresses.some((a) => routed.has(a)));
    if (due.length === 0) return;
    const key = refKey(ref);
    if (!this.swept.has(key)) {
      await this.deps.routes.removeAllOf(routeSource(ref), new Set(this.routed.get(key)?.keys));
      this.swept.add(key);
    }
    for (const workload of due) {
      if (workload.labels[SERVICE_LABEL] !== undefined)
        await this.deps.routes.removeAllOf(serviceSource(workload.ref));
      await this.deps.runtime.release(workload.ref);
    }
  }

  private async writeStatus(model: Model, desired: (m: Model, now: Date) => ModelStatus): Promise<void> {
    const ref = { namespace: model.metadata.namespace ?? 'default', name: model.metadata.name };
    const before = model.status;
    // A Model that holds its name records since when: it keeps the name, made again, across restarts.
    const withName = (m: Model, now: Date): ModelStatus => {
      const status = boundedMessages(desired(m, now));
      const models = this.deps.models.list();
      const since = this.names.holder(models, m) === undefined ? this.names.since(models, m) : undefined;
      return since === undefined ? status : { ...status, nameHeldSince: since };
    };
    const status = withName(model, new Date());
    if (sameStatus(before, status)) return;
    const written = await withConflictRetry(
      model,
      () => this.deps.models.read(ref),
      (m) => this.deps.models.updateStatus({ ...m, status: withName(m, new Date()) }),
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

  /** Every workload of the Model, of any version: nothing of a deleted Model keeps running. */
  private async removeWorkloads(ref: ResourceRef): Promise<void> {
    const names = new Set([ref.name, ...this.deps.runtime.workloads(ref)]);
    for (const name of names) {
      await this.deps.runtime.remove({ namespace: ref.namespace, name }, ref.name);
      this.draining.delete(refKey({ namespace: ref.namespace, name }));
    }
  }

  private forget(key: string): void {
    this.turns.forget(parseRefKey(key).namespace, key);
    this.nameRefused.delete(key);
    this.routed.delete(key);
    this.swept.delete(key);
    this.rolloutJudged.delete(key);
    this.deps.scaler?.forget(parseRefKey(key));
    // Checks are kept per workload: the Model's own name, or <name>-<version>.
    this.checked.delete(key);
  }
}

/** The host of a routed URL, as a Service's clusterIP spells it (no IPv6 brackets). */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  } catch {
    return '';
  }
}

/** A Model's spec.logging as its route carries it to the gateways: every call unless sampled. */
function payloadLogging(logging: NonNullable<Model['spec']['logging']>): NonNullable<Route['logging']> {
  return {
    sampleRate: logging.sampleRate ?? 1,
    ...(logging.redact === undefined || logging.redact.length === 0 ? {} : { redact: logging.redact }),
  };
}
