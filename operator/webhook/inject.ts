import type { V1Container, V1EnvVar, V1Pod, V1Probe } from '@kubernetes/client-node';
import { isModelName } from '../../common/resources/model-name.js';
import { VERSION_LABEL } from '../../common/resources/model-versions.js';
import { PORT_ANNOTATION, SERVICE_LABEL, WORKFLOW_LABEL } from '../../common/resources/labels.js';
import { WORKFLOW_ID_PATTERN } from '../../common/resources/workflow-service.js';
import { APP_PROBES_ENV, appHealthPath, type AppProbe } from '../../common/sidecar-probes.js';
import { SIDECAR_HELD_BYTES, SIDECAR_NODE_OPTIONS } from '../../common/sidecar-runtime.js';
import { INJECT_LABEL, MODEL_LABEL, SIDECAR_OPERATIONS_PORT } from '../serving/model-workload.js';

export { INJECT_LABEL };

/**
 * What the mutating webhook does to a pod that asks for the sidecar (`tollgate.dev/inject: "true"`),
 * as a pure function of the pod: the JSON patch that adds the Tollgate container, or the reason
 * the pod is refused. A pod that asked to be guarded and cannot be is refused, never let through
 * unguarded.
 *
 * The sidecar takes the workload's port on the pod's IP; the workload keeps the same port on the
 * pod's loopback (127.0.0.1), where only containers of the pod reach it. A Service keeps targeting
 * the same port number or name and now reaches the sidecar. A workload that listens on every
 * address collides with the sidecar on that port, so it cannot run unguarded by mistake. The
 * workload's probes on that port are pointed at the sidecar, which runs them on loopback.
 */
export const INJECTED_ANNOTATION = 'tollgate.dev/injected';
export const SIDECAR_CONTAINER = 'tollgate';

export interface InjectionConfig {
  /** The Tollgate image (entrypoint `tollgate`). */
  image: string;
  imagePullPolicy?: string;
  /**
   * Redis holding the key index, as the sidecar reaches it from any namespace. It may name the
   * credential's variables (`$(TOLLGATE_REDIS_PASSWORD)`), which Kubernetes fills in from
   * `credentialEnv`: the password is then never written in the pod spec.
   */
  redisUrl: string | undefined;
  /** Env entries read from the pod's namespace (secretKeyRef) before the URL. */
  credentialEnv?: V1EnvVar[];
  /** The operator's tracing settings (OTEL_*), so its sidecars' spans join the same collector. */
  tracingEnv?: V1EnvVar[];
  /**
   * The public half of the signing key, as a JWKS: the sidecar believes only index entries, routes
   * and grants it verifies (public: the pod's team may read it and gains nothing).
   */
  trustedKeys: string;
}

export type JsonPatchOp = { op: 'add' | 'replace'; path: string; value: unknown };

export type Injection =
  /** `workflow`: the workflow a guarded workflow service serves (not set for a model's pod). */
  | { kind: 'inject'; patch: JsonPatchOp[]; guards: string; workflow?: string }
  | { kind: 'skip'; reason: string }
  | { kind: 'refuse'; reason: string };

const PROBES = [
  ['readinessProbe', 'ready'],
  ['livenessProbe', 'live'],
  ['startupProbe', 'startup'],
] as const;

const pointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function labelOrAnnotation(pod: V1Pod, key: string): string | undefined {
  return pod.metadata?.labels?.[key] ?? pod.metadata?.annotations?.[key];
}

/** The guarded port and the container that listens on it. */
function workloadPort(pod: V1Pod): { port: number; container: V1Container } | string {
  const containers = pod.spec?.containers ?? [];
  const wanted = pod.metadata?.annotations?.[PORT_ANNOTATION];
  const all = containers.flatMap((c) => (c.ports ?? []).map((p) => ({ c, p })));
  if (wanted !== undefined) {
    const byName = all.find(({ p }) => p.name === wanted);
    if (byName) return { port: byName.p.containerPort, container: byName.c };
    const n = Number(wanted);
    if (!Number.isInteger(n) || n < 1 || n > 65535) {
      return `${PORT_ANNOTATION} is "${wanted}": give the port the workload listens on, as a number or the name of a container port`;
    }
    const byNumber = all.find(({ p }) => p.containerPort === n);
    const container = byNumber?.c ?? containers[0];
    if (!container) return 'the pod has no container';
    return { port: n, container };
  }
  const first = all.find(({ p }) => p.name === 'http') ?? all[0];
  if (!first) {
    return `no container declares a port: set the annotation ${PORT_ANNOTATION} to the port the workload listens on (on 127.0.0.1)`;
  }
  return { port: first.p.containerPort, container: first.c };
}

/** The port a probe's handler names, as a number (a name is looked up in the container's ports). */
function probePort(port: number | string | undefined, container: V1Container): number | undefined {
  if (typeof port === 'number') return port;
  if (port === undefined) return undefined;
  const n = Number(port);
  if (Number.isInteger(n)) return n;
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

/** The probe as the sidecar runs it, if it checks the guarded port; else undefined (left as it is). */
function takeOver(probe: V1Probe, container: V1Container, port: number): AppProbe | undefined {
  const timeout = probe.timeoutSeconds === undefined ? {} : { timeoutSeconds: probe.timeoutSeconds };
  if (probe.httpGet && probePort(probe.httpGet.port, container) === port) {
    return {
      httpGet: {
        path: probe.httpGet.path ?? '/',
        port,
        httpHeaders: (probe.httpGet.httpHeaders ?? []).map((h) => ({ name: h.name, value: h.value })),
      },
      ...timeout,
    };
  }
  if (probe.tcpSocket && probePort(probe.tcpSocket.port, container) === port) {
    return { tcpSocket: { port }, ...timeout };
  }
  return undefined;
}

/**
 * An update of a pod the webhook is shown (one labelled for the sidecar before or after it). The
 * sidecar is added at creation only, so the label added to a running pod would make it look
 * guarded (and let it pass the NetworkPolicies that admit sidecars) while nothing guards it:
 * refused; so is another image for the sidecar (a pod's images are the one thing of its
 * containers an update may change), which would leave the pod looking guarded by whatever image
 * its author chose. Any other update passes unchanged.
 */
export function planUpdate(old: V1Pod | undefined, pod: V1Pod): Injection {
  const asked = (p: V1Pod | undefined) => p?.metadata?.labels?.[INJECT_LABEL] === 'true';
  if (asked(pod) && !asked(old)) {
    return {
      kind: 'refuse',
      reason: `${INJECT_LABEL} is read when a pod is created: the sidecar cannot be added to a running pod; create the pod with the label instead`,
    };
  }
  const sidecarImage = (p: V1Pod | undefined) =>
    [...(p?.spec?.initContainers ?? []), ...(p?.spec?.containers ?? [])].find(
      (c) => c.name === SIDECAR_CONTAINER,
    )?.image;
  if (sidecarImage(old) !== undefined && sidecarImage(pod) !== sidecarImage(old)) {
    return {
      kind: 'refuse',
      reason: `the "${SIDECAR_CONTAINER}" container is the Tollgate sidecar the webhook added: its image cannot be changed on a running pod; create the pod again`,
    };
  }
  return { kind: 'skip', reason: 'an update' };
}

export function planInjection(pod: V1Pod, cfg: InjectionConfig): Injection {
  if (pod.metadata?.labels?.[INJECT_LABEL] !== 'true') return { kind: 'skip', reason: 'not asked for' };
  const spec = pod.spec;
  if (!spec) return { kind: 'refuse', reason: 'the pod has no spec' };
  if (spec.hostNetwork === true) {
    // Its ports would be the node's, and its loopback the node's: nothing the sidecar could guard.
    return {
      kind: 'refuse',
      reason:
        'a host-network pod shares the node’s network: the sidecar cannot guard its port; drop hostNetwork',
    };
  }
  if ([...spec.containers, ...(spec.initContainers ?? [])].some((c) => c.name === SIDECAR_CONTAINER)) {
    // Only this webhook adds it (once, at CREATE): a pod that brings its own would look guarded
    // and be guarded by whatever its author put there.
    return {
      kind: 'refuse',
      reason: `a container is already named "${SIDECAR_CONTAINER}": that name is the Tollgate sidecar's; rename the container`,
    };
  }

  // Never the operator's own URL in a tenant's pod spec: an installation that names no sidecar URL
  // guards nothing until it does.
  const redisUrl = cfg.redisUrl;
  if (redisUrl === undefined) {
    return {
      kind: 'refuse',
      reason:
        'this installation names no Redis URL for sidecars: set sidecar.redisUrl (an ACL user with the sidecar rules of docs/install.md, "Redis users")',
    };
  }

  const model = pod.metadata?.labels?.[MODEL_LABEL];
  const workflow = labelOrAnnotation(pod, WORKFLOW_LABEL);
  const service = labelOrAnnotation(pod, SERVICE_LABEL);
  if (workflow !== undefined && !WORKFLOW_ID_PATTERN.test(workflow)) {
    return {
      kind: 'refuse',
      reason: `${WORKFLOW_LABEL} "${workflow}" is not a workflow id (letters, digits, '-', '_', '.')`,
    };
  }
  let guardArgs: string[];
  let guards: string;
  if (model !== undefined) {
    if (!isModelName(model))
      return { kind: 'refuse', reason: `${MODEL_LABEL} "${model}" is not a model name (model-<id>)` };
    const version = pod.metadata?.labels?.[VERSION_LABEL];
    guardArgs = [
      '--model',
      model,
      ...(version === undefined ? [] : ['--model-version', version]),
      // Believed only as far as the model's route agrees (gateway/sidecar/sidecar.ts).
      ...(workflow === undefined ? [] : ['--workflow', workflow]),
    ];
    guards = `model ${model}`;
  } else {
    if (workflow === undefined || service === undefined) {
      return {
        kind: 'refuse',
        reason: `a pod labelled ${INJECT_LABEL}=true needs the labels (or annotations) ${WORKFLOW_LABEL} and ${SERVICE_LABEL}: the workflow whose bda keys may call it, and its service id`,
      };
    }
    if (!WORKFLOW_ID_PATTERN.test(service)) {
      return {
        kind: 'refuse',
        reason: `${SERVICE_LABEL} "${service}" is not a service id (letters, digits, '-', '_', '.')`,
      };
    }
    guardArgs = ['--workflow', workflow, '--service', service];
    guards = `workflow service ${workflow}/${service}`;
  }

  const found = workloadPort(pod);
  if (typeof found === 'string') return { kind: 'refuse', reason: found };
  const { port } = found;
  if (port === SIDECAR_OPERATIONS_PORT) {
    return {
      kind: 'refuse',
      reason: `port ${SIDECAR_OPERATIONS_PORT} is the sidecar's own; the workload must listen on another`,
    };
  }

  // A model's runtime that declares a gRPC port (MLServer's, on loopback behind the sidecar) has
  // the sidecar answer V2 over gRPC on it too, with the same checks.
  const grpc = model === undefined ? undefined : found.container.ports?.find((p) => p.name === 'grpc');
  const grpcArgs =
    grpc === undefined || grpc.containerPort === port || grpc.containerPort === SIDECAR_OPERATIONS_PORT
      ? []
      : ['--grpc-port', String(grpc.containerPort)];

  const patch: JsonPatchOp[] = [];
  const appProbes: Record<string, AppProbe> = {};
  spec.containers.forEach((c, i) => {
    for (const [field, kind] of PROBES) {
      const probe = c[field];
      if (!probe) continue;
      const original = takeOver(probe, c, port);
      if (!original) continue;
      appProbes[`${c.name}/${kind}`] = original;
      const { httpGet: _h, tcpSocket: _t, ...timing } = probe;
      patch.push({
        op: 'replace',
        path: `/spec/containers/${i}/${field}`,
        value: {
          ...timing,
          httpGet: { path: appHealthPath(c.name, kind), port: SIDECAR_OPERATIONS_PORT, scheme: 'HTTP' },
        },
      });
    }
  });

  const ops = { port: SIDECAR_OPERATIONS_PORT, scheme: 'HTTP' };
  const sidecar: V1Container = {
    name: SIDECAR_CONTAINER,
    image: cfg.image,
    ...(cfg.imagePullPolicy ? { imagePullPolicy: cfg.imagePullPolicy } : {}),
    // A native sidecar (Kubernetes ≥ 1.29): started before the workload, stopped after it, and
    // restarted on its own when it dies; its readiness is part of the pod's.
    restartPolicy: 'Always',
    args: [
      'sidecar',
      '--upstream',
      `http://127.0.0.1:${port}`,
      '--host',
      '$(POD_IP)',
      '--port',
      String(port),
      '--operations-port',
      String(SIDECAR_OPERATIONS_PORT),
      ...guardArgs,
      ...grpcArgs,
    ],
    env: [
      { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      // The pod's own namespace, from the API server: grants for another namespace's workload fail.
      { name: 'TOLLGATE_POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      ...(cfg.credentialEnv ?? []),
      { name: 'TOLLGATE_REDIS_URL', value: redisUrl },
      { name: 'TOLLGATE_TRUSTED_KEYS', value: cfg.trustedKeys },
      { name: APP_PROBES_ENV, value: JSON.stringify(appProbes) },
      // A sidecar leaves with its pod: no load balancer drain of its own to wait for.
      { name: 'TOLLGATE_SHUTDOWN_DRAIN_MS', value: '0' },
      { name: 'NODE_OPTIONS', value: SIDECAR_NODE_OPTIONS },
      { name: 'TOLLGATE_HELD_BYTES_LIMIT', value: String(SIDECAR_HELD_BYTES) },
      ...(cfg.tracingEnv ?? []),
    ],
    ports: [{ name: 'tollgate-ops', containerPort: SIDECAR_OPERATIONS_PORT, protocol: 'TCP' }],
    startupProbe: { httpGet: { path: '/healthz', ...ops }, periodSeconds: 1, failureThreshold: 60 },
    readinessProbe: { httpGet: { path: '/readyz', ...ops }, periodSeconds: 2, failureThreshold: 1 },
    livenessProbe: { httpGet: { path: '/healthz', ...ops }, periodSeconds: 10, failureThreshold: 3 },
    resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
    securityContext: {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      runAsUser: 10001,
      runAsGroup: 10001,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
  };
  patch.push(
    spec.initContainers === undefined
      ? { op: 'add', path: '/spec/initContainers', value: [sidecar] }
      : { op: 'add', path: '/spec/initContainers/-', value: sidecar },
  );
  patch.push(
    pod.metadata?.annotations === undefined
      ? { op: 'add', path: '/metadata/annotations', value: { [INJECTED_ANNOTATION]: guards } }
      : { op: 'add', path: `/metadata/annotations/${pointer(INJECTED_ANNOTATION)}`, value: guards },
  );
  return { kind: 'inject', patch, guards, ...(model === undefined && workflow ? { workflow } : {}) };
}
