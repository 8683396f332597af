import {
  AppsV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  type KubeConfig,
  type V1Deployment,
  type V1Service,
} from '@kubernetes/client-node';
import { isApiStatus } from '../../common/kube/custom-objects.js';
import { clusterIpOrigin } from '../../common/kube/cluster-ip.js';
import { MODEL_HTTP_PORT } from '../../common/resources/model.js';
import { grantAudience } from '../../common/resources/grant.js';
import type { Logger } from '../../common/logger.js';
import { KubeLabelledSource } from '../framework/kube-source.js';
import type { ResourceRef } from '../framework/resource-source.js';
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  MODEL_LABEL,
  TEMPLATE_HASH_ANNOTATION,
  modelDeployment,
  modelService,
  modelUrl,
  isModelWorkload,
  RUNTIME_CONTAINER,
  SERVING_PORT,
  workloadSelector,
  type WorkloadOptions,
} from './model-workload.js';
import { startingReplicas } from './starting-replicas.js';
import { asPod, stateOf, workloadRefusal, type Pod } from './kube-objects.js';
import { carriesRouteFinalizer, type RouteHold } from '../route-hold.js';
import type { HeldAddress, RuntimeDriver, RuntimePlan, RuntimeState } from './runtime-driver.js';

export const FIELD_MANAGER = 'tollgate-operator';
const SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY},${MODEL_LABEL}`;

type Workload = V1Deployment & { metadata: { name: string } };
const asWorkload = (raw: unknown): Workload | undefined => raw as Workload;
/** How long a workload name's claim holds without its objects in sight (the informers' delay, with room). */
const CLAIM_HELD_MS = 60_000;

/** Serves a Model with a Deployment (MLServer and its puller, started together) and a Service. */
export class KubeRuntimeDriver implements RuntimeDriver {
  private readonly objects: KubernetesObjectApi;
  private readonly apps: AppsV1Api;
  private readonly core: CoreV1Api;
  private readonly deployments: KubeLabelledSource<Workload>;
  private readonly services: KubeLabelledSource<Workload>;
  /** The workloads' pods: a starting replica is asked directly (starting-replicas.ts). */
  private readonly pods: KubeLabelledSource<Pod>;
  /**
   * Which Model each workload name is this process's for, and since when, by `<namespace>/<name>`:
   * the informers learn of a Deployment only after it is made, so two Models whose workload names
   * meet, reconciled together, would both find the name free and apply one Deployment in turn.
   */
  private readonly claims = new Map<string, { model: string; at: number }>();

  constructor(
    kc: KubeConfig,
    private readonly opts: WorkloadOptions,
    private readonly log: Logger,
    /** Keeps each Service's cluster IP while a route names it. */
    private readonly hold: RouteHold,
    namespace?: string,
  ) {
    this.objects = KubernetesObjectApi.makeApiClient(kc);
    this.apps = kc.makeApiClient(AppsV1Api);
    this.core = kc.makeApiClient(CoreV1Api);
    this.deployments = new KubeLabelledSource(kc, 'deployments', SELECTOR, asWorkload, log, namespace);
    this.services = new KubeLabelledSource(kc, 'services', SELECTOR, asWorkload, log, namespace);
    this.pods = new KubeLabelledSource(kc, 'pods', SELECTOR, asPod, log, namespace);
  }

  async start(onChange: (ref: ResourceRef) => void): Promise<void> {
    const toModel = <T extends Workload | Pod>(
      ref: ResourceRef,
      deleted: T | undefined,
      source: KubeLabelledSource<T>,
    ) => {
      const obj = deleted ?? source.get(ref);
      const model = obj?.metadata.labels?.[MODEL_LABEL];
      if (model) onChange({ namespace: ref.namespace, name: model });
    };
    // Not waited for: pods only make a cold start sooner, and an operator whose role cannot list
    // them yet (an image upgraded before its chart) still serves every Model, as before.
    this.pods
      .start((ref, deleted) => toModel(ref, deleted, this.pods), {
        // A pod's status changes many times as it starts and runs; only what starting-replicas.ts
        // reads of it (the few fields kept) can change a route.
        changed: (before, after) => JSON.stringify(before) !== JSON.stringify(after),
      })
      .catch((err: unknown) =>
        this.log.warn({ err }, 'the models’ pods are not watched: cold starts wait for the kubelet'),
      );
    await Promise.all([
      this.deployments.start((ref, deleted) => toModel(ref, deleted, this.deployments)),
      this.services.start((ref, deleted) => toModel(ref, deleted, this.services)),
    ]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.deployments.stop(), this.services.stop(), this.pods.stop()]);
  }

  async apply(plan: RuntimePlan): Promise<RuntimeState> {
    const ref = { namespace: plan.model.metadata.namespace ?? 'default', name: plan.workload };
    const cached: V1Deployment | undefined = this.deployments.get(ref);
    const claimKey = `${ref.namespace}/${ref.name}`;
    const claimedBefore = this.claims.has(claimKey);
    // `<model>-<version>` may be another Model's own name (or its version's workload): the first
    // to make it keeps it, and this version is not served until it is renamed.
    if (!this.claim(ref, plan.model.metadata.name)) {
      return {
        replicas: 0,
        readyReplicas: 0,
        url: '',
        rollingOut: false,
        failure: {
          reason: 'WorkloadNameTaken',
          message: `the Deployment or Service ${ref.name} in namespace ${ref.namespace} serves another Model; give this version a name that makes no other Model's workload name`,
        },
      };
    }
    const desired = modelDeployment(plan, this.opts);
    const hash = desired.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION];
    let live = cached;
    let refused: RuntimeState['failure'];
    if (live === undefined || live.metadata?.annotations?.[TEMPLATE_HASH_ANNOTATION] !== hash) {
      try {
        live = await this.objects.patch(
          desired,
          undefined,
          undefined,
          FIELD_MANAGER,
          true,
          PatchStrategy.ServerSideApply,
        );
      } catch (err) {
        // Refused (a policy, a quota): nothing was made, so nothing would ever release the name.
        if (!claimedBefore && this.deployments.get(ref) === undefined) this.claims.delete(claimKey);
        refused = workloadRefusal(err, 'Deployment', ref);
        // What the last accepted spec made runs on; with nothing made, nothing serves.
        if (live === undefined)
          return { replicas: 0, readyReplicas: 0, url: '', rollingOut: false, failure: refused };
        // Still scaled as asked (the autoscaler's, a wake from zero): the replicas alone are the
        // operator's to set, whatever of the template was refused.
        if (live.spec?.replicas !== plan.replicas) live = await this.scale(live, plan.replicas);
      }
    }
    const state = stateOf(live, modelUrl(ref.name, ref.namespace));
    try {
      state.routeUrl = await this.serviceOrigin(plan, ref);
    } catch (err) {
      const serviceRefused = workloadRefusal(err, 'Service', ref);
      refused ??= serviceRefused;
      // A Service already made (its new ports refused) still serves where it is.
      state.routeUrl =
        clusterIpOrigin((this.services.get(ref) as V1Service | undefined)?.spec, MODEL_HTTP_PORT) ?? '';
    }
    if (refused !== undefined) state.failure = refused;
    if (state.readyReplicas === 0 && state.replicas > 0)
      state.starting = startingReplicas(
        this.pods.list(),
        ref.namespace,
        workloadSelector(plan),
        SERVING_PORT,
        RUNTIME_CONTAINER,
      );
    if (plan.gateway === 'sidecar')
      state.grantAudience = grantAudience.model(
        plan.model.metadata.namespace ?? 'default',
        plan.model.metadata.name,
      );
    return state;
  }

  private async scale(live: V1Deployment, replicas: number): Promise<V1Deployment> {
    const { name = '', namespace = '' } = live.metadata ?? {};
    return this.objects.patch(
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name, namespace },
        spec: { replicas },
      } as V1Deployment,
      undefined,
      undefined,
      FIELD_MANAGER,
      undefined,
      PatchStrategy.MergePatch,
    );
  }

  /**
   * The workload's Service, as the plan has it, and where it is called (its cluster IP; '' when it
   * has none yet). Written when missing, without the route finalizer, or when its ports are not the
   * plan's (a Service made before the sidecar answered gRPC has its HTTP port only). The
   * namespace's team may edit it: one turned into an ExternalName or headless Service, or given
   * another selector, is deleted and made again; it is never called by name. One being deleted is
   * not called: it is released once no route names it (`held`, `release`), then made again.
   */
  private async serviceOrigin(plan: RuntimePlan, ref: ResourceRef): Promise<string> {
    const service = modelService(plan);
    const ports = (svc: V1Service | undefined) =>
      (svc?.spec?.ports ?? []).map((p) => `${p.name}:${p.port}:${p.targetPort}`).join(',');
    const selector = (svc: V1Service | undefined) =>
      JSON.stringify(Object.entries(svc?.spec?.selector ?? {}).sort(([a], [b]) => (a < b ? -1 : 1)));
    let live = this.services.get(ref) as V1Service | undefined;
    if (live?.metadata?.deletionTimestamp) return '';
    if (
      live !== undefined &&
      (clusterIpOrigin(live.spec, MODEL_HTTP_PORT) === undefined || selector(live) !== selector(service))
    ) {
      await this.deleteService(ref, live);
      return '';
    }
    if (live === undefined || ports(live) !== ports(service) || !carriesRouteFinalizer(live)) {
      live = (await this.objects.patch(
        service,
        undefined,
        undefined,
        FIELD_MANAGER,
        true,
        PatchStrategy.ServerSideApply,
      )) as V1Service;
      this.services.remember(live as Workload);
    }
    return clusterIpOrigin(live.spec, MODEL_HTTP_PORT) ?? '';
  }

  /**
   * Deletes a workload's Service: its finalizer keeps it (and its cluster IP) until `release`.
   * `seen`: that very object, as this process saw it, never one made again
   * meanwhile. The cache is told at once, so the same reconcile may release it.
   */
  private async deleteService(ref: ResourceRef, seen?: V1Service): Promise<void> {
    const preconditions =
      seen === undefined
        ? undefined
        : { uid: seen.metadata?.uid, resourceVersion: seen.metadata?.resourceVersion };
    try {
      const left = await this.core.deleteNamespacedService({
        ...ref,
        ...(preconditions === undefined ? {} : { body: { preconditions } }),
      });
      // Kept only while a watch event will replace it: being deleted, and still labelled a model's.
      if (left.metadata?.deletionTimestamp && isModelWorkload(left)) this.services.remember(left as Workload);
    } catch (e) {
      if (!isApiStatus(e, 404) && !isApiStatus(e, 409)) throw e;
    }
  }

  held(model: ResourceRef): HeldAddress[] {
    return this.services
      .list()
      .map((w) => w as V1Service & Workload)
      .filter((svc) => {
        const { namespace, labels, deletionTimestamp } = svc.metadata;
        if (namespace !== model.namespace || labels?.[MODEL_LABEL] !== model.name) return false;
        return deletionTimestamp !== undefined && carriesRouteFinalizer(svc);
      })
      .map((svc) => ({
        ref: { namespace: model.namespace, name: svc.metadata.name },
        // Every address it holds, whatever its shape now (no selector, no port of ours).
        addresses: [...new Set([...(svc.spec?.clusterIPs ?? []), svc.spec?.clusterIP ?? ''])].filter(
          (ip) => ip !== '' && ip !== 'None',
        ),
        labels: svc.metadata.labels ?? {},
      }));
  }

  async release(ref: ResourceRef): Promise<void> {
    await this.hold.release(ref);
  }

  workloads(model: ResourceRef): string[] {
    const names = new Set<string>();
    for (const source of [this.deployments, this.services]) {
      for (const w of source.list()) {
        const meta = w.metadata as Workload['metadata'] & { namespace?: string };
        if (meta.namespace === model.namespace && meta.labels?.[MODEL_LABEL] === model.name)
          names.add(meta.name);
      }
    }
    return [...names];
  }

  /**
   * Whether the workload `ref`, if it exists or is being made, is Model `model`'s (its label, or
   * this process's claim, says whose it is).
   */
  private ownedBy(ref: ResourceRef, model: string): boolean {
    const objects = [this.deployments.get(ref), this.services.get(ref)].filter((o) => o !== undefined);
    // Made: its labels say whose it is.
    if (objects.length > 0) return objects.every((o) => o.metadata?.labels?.[MODEL_LABEL] === model);
    // Not (yet) seen: a claim of another Model's holds while its objects could still be on the way;
    // one older than that is left from objects gone without a removal (the garbage collector
    // deleting a deleted Model's), and frees the name.
    const claimed = this.claims.get(`${ref.namespace}/${ref.name}`);
    return claimed === undefined || claimed.model === model || Date.now() - claimed.at > CLAIM_HELD_MS;
  }

  /** Takes the workload name for `model` when it is free or already its own; checked and taken at once. */
  private claim(ref: ResourceRef, model: string): boolean {
    if (!this.ownedBy(ref, model)) return false;
    this.claims.set(`${ref.namespace}/${ref.name}`, { model, at: Date.now() });
    return true;
  }

  async remove(ref: ResourceRef, model: string): Promise<void> {
    if (!this.ownedBy(ref, model)) return;
    // The name is free again once its objects are gone (the informers then say so).
    this.claims.delete(`${ref.namespace}/${ref.name}`);
    // A Model whose folder stays wrong is re-checked every 30 s: no API calls when nothing exists
    // (a Service being deleted already waits for its release).
    const service = this.services.get(ref);
    const deleting = service?.metadata.deletionTimestamp !== undefined;
    if (!this.deployments.get(ref) && (service === undefined || deleting)) return;
    const ignoreMissing = (e: unknown) => {
      if (!isApiStatus(e, 404)) throw e;
    };
    await Promise.all([
      this.apps.deleteNamespacedDeployment({ ...ref, propagationPolicy: 'Background' }).catch(ignoreMissing),
      deleting ? undefined : this.deleteService(ref),
    ]);
  }
}
