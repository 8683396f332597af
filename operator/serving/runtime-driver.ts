import type { StartingReplica } from './starting-replicas.js';
import type { ModelSettings } from '../../common/model-settings/types.js';
import type { Model, ModelGateway } from '../../common/resources/model.js';
import type { ResourceRef } from '../framework/resource-source.js';

/**
 * The seam between the Model controller and what actually serves a model. The Kubernetes driver
 * (kube-runtime.ts) writes a Deployment and a Service; standalone mode plugs in a driver that runs
 * a local MLServer process on the pulled folder. The controller never knows which.
 */
export interface RuntimePlan {
  model: Model;
  /** What serves this version: the Deployment and Service (or the local run) of that name. */
  workload: string;
  /** The version's name; undefined for a Model with one unnamed version (spec.storageUri). */
  version: string | undefined;
  /** The version's model folder. */
  storageUri: string;
  /** Replicas to run: spec.replicas, or the autoscaler's figure for this version. */
  replicas: number;
  /** The settings MLServer serves with (read from the folder, or written for an MLflow folder). */
  settings: ModelSettings;
  /** True when the settings were written by the operator: the runtime must place them in the folder. */
  settingsGenerated: boolean;
  /** Container image (Kubernetes) or a hint of the runtime flavour (local). */
  image: string;
  /**
   * Where calls are checked. `sidecar`: the runtime listens only where a Tollgate sidecar in front
   * of it reaches it (a runtime that has no such placement, a local process, serves as central).
   */
  gateway: ModelGateway;
}

export interface RuntimeState {
  /** Desired replicas. */
  replicas: number;
  readyReplicas: number;
  /** Base URL of the V2 server (http://host:port), for status.url, and the route's unless `routeUrl`. */
  url: string;
  /**
   * Where the gateway calls the V2 server, when not at `url`: on a cluster, the Service's cluster
   * IP, never its name, which the namespace's team could alias elsewhere (common/kube/cluster-ip.ts);
   * '' while it has none.
   */
  routeUrl?: string;
  /** True while a rollout of the current plan is still replacing replicas. */
  rollingOut: boolean;
  /** Where the runtime's own Prometheus metrics are, when a driver knows (standalone MLServer). */
  metricsUrl?: string;
  /** Where the runtime's own gRPC service answers (host:port), when a driver knows (standalone MLServer). */
  grpcAddress?: string;
  /** The runtime answers through a sidecar that takes grants for this audience. */
  grantAudience?: string;
  /**
   * None ready yet: the replicas starting, where they serve and their readiness probe, for the
   * gateway to send held calls to as soon as one answers ready (starting-replicas.ts).
   */
  starting?: StartingReplica[];
  /** Set when the runtime gave up (e.g. progress deadline exceeded): the reason and the message. */
  failure?: { reason: string; message: string };
}

export interface HeldAddress {
  /** The workload (`ref.name` is its name). */
  ref: ResourceRef;
  /** Every IP it holds, as a route's URL names it (no IPv6 brackets). */
  addresses: string[];
  labels: Record<string, string>;
}

export interface RuntimeDriver {
  /** Creates or updates the runtime to match the plan (idempotent) and returns its state. */
  apply(plan: RuntimePlan): Promise<RuntimeState>;
  /**
   * Tears a workload of Model `model` down (idempotent); `ref.name` is the workload's name. One of
   * that name that serves another Model (`<model>-<version>` can be another Model's own name) is
   * left alone.
   */
  remove(ref: ResourceRef, model: string): Promise<void>;
  /**
   * A Model's workloads being torn down whose address is still held for it (a cluster keeps a
   * deleted Service's IP until `release`, so no other team's Service is given it while calls may
   * still be sent there), with their addresses and labels.
   */
  held(model: ResourceRef): HeldAddress[];
  /** Lets the address of a workload being torn down go (`ref.name` is the workload's name). */
  release(ref: ResourceRef): Promise<void>;
  /** The workloads that exist for a Model (every version, including ones no longer in its spec). */
  workloads(model: ResourceRef): string[];
  /** Watches runtimes; calls `onChange` with the Model's ref when one changes (e.g. replicas become ready). */
  start(onChange: (ref: ResourceRef) => void): Promise<void>;
  stop(): Promise<void>;
}
