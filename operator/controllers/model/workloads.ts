import type { FolderCheck } from '../../../common/model-settings/check-folder.js';
import {
  DEFAULT_MLFLOW_IMAGE,
  DEFAULT_SKLEARN_IMAGE,
  type Model,
  type ModelGateway,
} from '../../../common/resources/model.js';
import { scalingOf } from '../../../common/resources/model-scaling.js';
import type { ServedVersion } from '../../../common/resources/model-versions.js';
import type { OwnedSource } from '../../framework/controller.js';
import { refKey, type ResourceRef } from '../../framework/resource-source.js';
import type { RuntimeDriver, RuntimePlan } from '../../serving/runtime-driver.js';
import type { DrainingVersion, Observation } from './status.js';

/**
 * How long a version removed from the spec keeps running once out of the routes: every gateway
 * drops the route within a pub/sub message (or a 1 s missing-route cache), and the calls it was
 * already given finish.
 */
const DRAIN_MS = 15_000;

/** Where the replicas of an autoscaled version come from; its decisions enqueue the Model. */
export interface ReplicaScaler extends OwnedSource {
  replicasFor(model: Model, version: ServedVersion): number;
  noteStarting(model: Model, version: ServedVersion): void;
  forget(ref: ResourceRef): void;
}

export interface WorkloadOptions {
  runtime: RuntimeDriver;
  /** Replaces both default images (an image built from images/mlserver serves both kinds). */
  runtimeImage?: string;
  /** Where a Model's calls are checked when its spec does not say. */
  defaultGateway?: ModelGateway;
  /** Replicas of Models with spec.scaling (without it, such Models run their minimum). */
  scaler?: ReplicaScaler;
}

/**
 * The workloads part of the Model reconciler: each version's runtime (Deployment + Service, or a
 * local process) made from its checked settings, and the workloads of versions no longer in the
 * spec drained, then removed.
 */
export class ModelWorkloads {
  /** Since when each removed version's workload (by namespace/workload) has been draining. */
  private readonly draining = new Map<string, number>();

  constructor(private readonly opts: WorkloadOptions) {}

  gatewayOf(model: Model): ModelGateway {
    return model.spec.gateway ?? this.opts.defaultGateway ?? 'central';
  }

  /**
   * The version's runtime as its observation asks: applied from good settings (with its state on
   * `obs`), removed otherwise.
   */
  async apply(model: Model, version: ServedVersion, obs: Observation): Promise<void> {
    const namespace = model.metadata.namespace ?? 'default';
    if (obs.kind !== 'settings' || !obs.check.ok) {
      await this.opts.runtime.remove({ namespace, name: version.workload }, model.metadata.name);
      return;
    }
    const plan = this.plan(model, version, obs.check);
    obs.runtime = await this.opts.runtime.apply(plan);
    obs.cold = plan.replicas === 0 && scalingOf(model.spec)?.minReplicas === 0;
    if (plan.replicas > 0 && obs.runtime.readyReplicas === 0) this.opts.scaler?.noteStarting(model, version);
  }

  /** Workloads of the Model serving no version of the spec (removed versions, or the unnamed one replaced). */
  stale(ref: ResourceRef, wanted: ReadonlySet<string>): string[] {
    return this.opts.runtime.workloads(ref).filter((w) => !wanted.has(w));
  }

  /**
   * Workloads of versions no longer in the spec: out of the routes already, they keep running for
   * the drain window so the calls they were given finish, then go. While no version of the spec
   * serves yet (`serving` false: a Model just given versions), they still take the calls and wait:
   * the drain begins once the new ones serve.
   */
  async drain(
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
        await this.opts.runtime.remove({ namespace: ref.namespace, name: workload }, ref.name);
        this.draining.delete(key);
        continue;
      }
      versions.push({ name, serving: false });
      nextMs = Math.min(nextMs, left);
    }
    return { versions, nextMs };
  }

  /** Every workload of the Model, of any version: nothing of a deleted Model keeps running. */
  async removeAll(ref: ResourceRef): Promise<void> {
    const names = new Set([ref.name, ...this.opts.runtime.workloads(ref)]);
    for (const name of names) {
      await this.opts.runtime.remove({ namespace: ref.namespace, name }, ref.name);
      this.draining.delete(refKey({ namespace: ref.namespace, name }));
    }
  }

  forget(ref: ResourceRef): void {
    this.opts.scaler?.forget(ref);
  }

  private plan(model: Model, version: ServedVersion, check: Extract<FolderCheck, { ok: true }>): RuntimePlan {
    const override = model.spec.runtime?.implementation;
    let settings = override ? { ...check.settings, implementation: override } : check.settings;
    // MLServer then answers with model_version, and serves /v2/models/<m>/versions/<v>/... itself.
    if (version.name !== undefined)
      settings = { ...settings, parameters: { ...settings.parameters, version: version.name } };
    const image =
      model.spec.runtime?.image ??
      this.opts.runtimeImage ??
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

  private replicasFor(model: Model, version: ServedVersion): number {
    const policy = scalingOf(model.spec);
    if (policy === undefined) return model.spec.replicas ?? 1;
    return this.opts.scaler?.replicasFor(model, version) ?? policy.minReplicas;
  }
}
