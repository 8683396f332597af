import { ApiException, type V1Container, type V1Deployment, type V1Pod } from '@kubernetes/client-node';
import { apiFailureDetail } from '../../common/kube/custom-objects.js';
import { VERSION_LABEL } from '../../common/resources/model-versions.js';
import type { ResourceRef } from '../framework/resource-source.js';
import { MODEL_LABEL } from './model-workload.js';
import type { RuntimeState } from './runtime-driver.js';

/** What the Kubernetes runtime (kube-runtime.ts) reads of its objects: a pod's few fields, a Deployment's state, a refusal. */

export type Pod = V1Pod & { metadata: { name: string } };
/**
 * What starting-replicas.ts reads of a pod, and nothing else: anyone who may create pods can label
 * them as a model's, so the cache holds a few fields per pod, never their env, annotations or
 * status details.
 */
export const asPod = (raw: unknown): Pod | undefined => {
  const p = raw as Pod;
  const slim = (c: V1Container): V1Container => ({
    name: c.name,
    ...(c.ports === undefined
      ? {}
      : { ports: c.ports.map((x) => ({ name: x.name, containerPort: x.containerPort })) }),
    ...(c.readinessProbe?.httpGet === undefined
      ? {}
      : {
          readinessProbe: {
            httpGet: {
              port: c.readinessProbe.httpGet.port,
              ...(c.readinessProbe.httpGet.path === undefined ? {} : { path: c.readinessProbe.httpGet.path }),
              ...(c.readinessProbe.httpGet.scheme === undefined
                ? {}
                : { scheme: c.readinessProbe.httpGet.scheme }),
            },
          },
        }),
  });
  // The labels a workload selects its pods by, and no others.
  const labels: Record<string, string> = {};
  for (const name of [MODEL_LABEL, VERSION_LABEL]) {
    const value = p.metadata.labels?.[name];
    if (value !== undefined) labels[name] = value;
  }
  return {
    metadata: {
      name: p.metadata.name,
      ...(p.metadata.namespace === undefined ? {} : { namespace: p.metadata.namespace }),
      labels,
      ...(p.metadata.deletionTimestamp === undefined
        ? {}
        : { deletionTimestamp: p.metadata.deletionTimestamp }),
    },
    spec: {
      containers: (p.spec?.containers ?? []).map(slim),
      initContainers: (p.spec?.initContainers ?? []).map(slim),
      ...(p.spec?.hostNetwork === undefined ? {} : { hostNetwork: p.spec.hostNetwork }),
    },
    status: {
      ...(p.status?.phase === undefined ? {} : { phase: p.status.phase }),
      ...(p.status?.podIP === undefined ? {} : { podIP: p.status.podIP }),
    },
  };
};

export function stateOf(d: V1Deployment, url: string): RuntimeState {
  const replicas = d.spec?.replicas ?? 1;
  const status = d.status ?? {};
  const current = (status.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
  const state: RuntimeState = {
    replicas,
    readyReplicas: status.readyReplicas ?? 0,
    url,
    rollingOut: !current || (status.updatedReplicas ?? 0) < replicas,
  };
  const stuck = status.conditions?.find((c) => c.type === 'Progressing' && c.status === 'False');
  const replicaFailure = status.conditions?.find((c) => c.type === 'ReplicaFailure' && c.status === 'True');
  const failed = stuck ?? replicaFailure;
  if (failed)
    state.failure = { reason: failed.reason ?? failed.type, message: failed.message ?? failed.type };
  return state;
}

/**
 * A workload the API server refused for what the Model asks (a validation: requests above limits,
 * an unknown resource name; an admission policy; a quota), as a failure its status shows: the
 * reconcile would fail the same way on every retry, saying it only in the operator's log. Any other
 * failure (the API server down, a conflict) is thrown, to be retried.
 */
export function workloadRefusal(
  err: unknown,
  kind: string,
  ref: ResourceRef,
): { reason: string; message: string } {
  if (!(err instanceof ApiException) || ![400, 403, 422].includes(err.code)) throw err;
  return {
    reason: 'WorkloadRejected',
    message: `the Kubernetes API refused the model's ${kind} ${ref.name} (${apiFailureDetail(err)}): fix what it names in the Model's spec (spec.resources, spec.env), or ask the namespace's administrators about its quota or policies`,
  };
}
