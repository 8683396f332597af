import type {
  V1Deployment,
  V1PodTemplateSpec,
  V1ResourceRequirements,
  V1Service,
} from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { verbatim } from '../../common/kube/verbatim.js';
import {
  isRuntimeEnvSetByTollgate,
  MODEL_API_VERSION,
  MODEL_HTTP_PORT,
  MODEL_KIND,
  type Model,
} from '../../common/resources/model.js';
import type { RuntimePlan } from './runtime-driver.js';
import { ROUTE_FINALIZER } from '../route-hold.js';
import { WORKFLOW_LABEL } from '../../common/resources/labels.js';
import { VERSION_LABEL } from '../../common/resources/model-versions.js';

/** The label a pod carries to get the Tollgate sidecar from the operator's webhook. */
export const INJECT_LABEL = 'tollgate.dev/inject';

/**
 * The Deployment and Service that serve one Model, as pure functions of the plan (unit-testable,
 * and applied with server-side apply so a reconcile is idempotent).
 */
export const MODEL_LABEL = 'tollgate.dev/model';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'tollgate';
/** A Deployment or Service this operator made for a Model (labels only: a team may set them too). */
export const isModelWorkload = (obj: { metadata?: { labels?: Record<string, string> } }): boolean =>
  obj.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY && !!obj.metadata.labels[MODEL_LABEL];
export const TEMPLATE_HASH_ANNOTATION = 'tollgate.dev/template-hash';
export const MODELS_DIR = '/mnt/models';
const GRPC_PORT = 8081;
/** The runtime's container, and the port its Service sends calls to (a sidecar's, once injected). */
export const RUNTIME_CONTAINER = 'mlserver';
export const SERVING_PORT = 'http';
const METRICS_PORT = 8082;
/** The injected sidecar's health, readiness and metrics port (operator/webhook/inject.ts). */
export const SIDECAR_OPERATIONS_PORT = 15021;
const RUN_AS = 1000;
export const PULL_CONTAINER = 'pull';
/** Written once the folder is whole: the runtime starts serving it then (they start together). */
export const PULLED_MARKER = `${MODELS_DIR}/.tollgate-pulled`;

/**
 * The puller's command, in the Tollgate image (its CLI is node /app/bin/tollgate.js; TOLLGATE_CLI
 * names another, for the tests), with the container's args `pull <storageUri> <folder> ...`: pulls,
 * marks the folder whole, then idles, since a container that ended would be started again, and
 * ends at once when the pod stops. A failed pull ends it, and the kubelet starts it again with its
 * back-off.
 */
export const PULL_THEN_IDLE = [
  // The shell is the container's first process: it ignores signals it does not trap.
  "trap 'kill $child 2>/dev/null; exit 0' TERM INT",
  // Started again (its sandbox rebuilt, the folder kept): a whole folder the runtime may be serving
  // is not pulled over.
  'if [ ! -e "$TOLLGATE_PULLED" ]; then',
  '  node "${TOLLGATE_CLI:-/app/bin/tollgate.js}" "$@" & child=$!',
  '  wait $child || exit $?',
  '  : > "$TOLLGATE_PULLED"',
  'fi',
  'while :; do sleep 3600 & child=$!; wait $child; done',
].join('\n');

/**
 * The runtime's command: serves the folder once it is whole. The Tollgate runtime image
 * (images/mlserver) has `tollgate-mlserver`, which loads MLServer's modules meanwhile; any other
 * MLServer image waits, then starts as it always does.
 */
export const WAIT_THEN_SERVE = [
  // The container's first process until the exec: it ignores signals it does not trap.
  "trap 'exit 143' TERM INT",
  'command -v tollgate-mlserver >/dev/null 2>&1 && exec tollgate-mlserver',
  'until [ -e "$TOLLGATE_PULLED" ]; do sleep 0.05; done',
  'exec mlserver start "$MLSERVER_MODELS_DIR"',
].join('\n');
const PRESTOP_SECONDS = 5;

export interface WorkloadOptions {
  /** The Tollgate image that runs `tollgate pull` in the container beside the runtime. */
  pullerImage: string;
}

/** The workload's Service by name: what a Model's status gives (the gateway calls its cluster IP). */
export const modelUrl = (name: string, namespace: string): string =>
  `http://${name}.${namespace}.svc:${MODEL_HTTP_PORT}`;

type Workload = Pick<RuntimePlan, 'model' | 'workload' | 'version'>;

/**
 * What selects a workload's pods. An unversioned Model's keeps the selector it always had (a
 * Deployment's selector cannot change); a version's adds its version.
 */
export const workloadSelector = (w: Workload): Record<string, string> => ({
  [MODEL_LABEL]: w.model.metadata.name,
  ...(w.version === undefined ? {} : { [VERSION_LABEL]: w.version }),
});

const labelsFor = (w: Workload) => ({
  'app.kubernetes.io/name': 'mlserver',
  'app.kubernetes.io/instance': w.workload,
  [MANAGED_BY_LABEL]: MANAGED_BY,
  ...workloadSelector(w),
});

const ownerRefs = (model: Model) => [
  {
    apiVersion: MODEL_API_VERSION,
    kind: MODEL_KIND,
    name: model.metadata.name,
    uid: model.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  },
];

const restricted = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
};

export function modelDeployment(plan: RuntimePlan, opts: WorkloadOptions): V1Deployment {
  const { model } = plan;
  const name = model.metadata.name;
  const folder = `${MODELS_DIR}/${name}`;
  const labels = labelsFor(plan);
  const sidecar = plan.gateway === 'sidecar';
  // Behind a sidecar, MLServer listens on the pod's loopback only and the operator's webhook adds
  // the Tollgate container in front of it (operator/webhook/inject.ts); a pod the webhook did not
  // reach serves nobody, since nothing outside the pod can reach MLServer.
  const podLabels = sidecar ? { ...labels, [INJECT_LABEL]: 'true' } : labels;
  const podAnnotations: Record<string, string> = {
    ...(sidecar && model.spec.workflow !== undefined ? { [WORKFLOW_LABEL]: model.spec.workflow } : {}),
    // Prometheus scrapes MLServer's own metrics; behind a sidecar MLServer listens on the pod's
    // loopback only, so the sidecar's operations port is scraped instead (its per-model figures).
    'prometheus.io/scrape': 'true',
    'prometheus.io/port': String(sidecar ? SIDECAR_OPERATIONS_PORT : METRICS_PORT),
    'prometheus.io/path': '/metrics',
  };
  const credentials = model.spec.credentials?.secretName;
  // Tenant text beside the credentials' environment: never expanded (common/kube/verbatim.ts).
  const pullArgs = ['pull', verbatim(plan.storageUri), folder];
  if (plan.settingsGenerated) pullArgs.push('--settings', verbatim(JSON.stringify(plan.settings)));
  const template: V1PodTemplateSpec = {
    metadata: { labels: podLabels },
    spec: {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: RUN_AS,
        runAsGroup: RUN_AS,
        fsGroup: RUN_AS,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      // The runtime and the puller start together: the runtime loads its modules while the folder
      // is pulled, and waits for it. An init container would make the runtime wait for the kubelet
      // to see the puller end, up to a second (docs/versions-and-scaling.md, the cold starts).
      containers: [
        {
          name: RUNTIME_CONTAINER,
          image: plan.image,
          command: ['sh', '-c', WAIT_THEN_SERVE],
          env: [
            { name: 'MLSERVER_MODELS_DIR', value: MODELS_DIR },
            { name: 'MLSERVER_HTTP_PORT', value: String(MODEL_HTTP_PORT) },
            { name: 'MLSERVER_GRPC_PORT', value: String(GRPC_PORT) },
            { name: 'MLSERVER_METRICS_PORT', value: String(METRICS_PORT) },
            { name: 'MLSERVER_LOAD_MODELS_AT_STARTUP', value: 'true' },
            ...(sidecar ? [{ name: 'MLSERVER_HOST', value: '127.0.0.1' }] : []),
            // Never one of Tollgate's own (the CRD refuses them; a manifest no API server checked
            // may not): server-side apply refuses a list with a name twice.
            ...(model.spec.env ?? []).filter((e) => !isRuntimeEnvSetByTollgate(e.name)),
            { name: 'TOLLGATE_PULLED', value: PULLED_MARKER },
          ],
          ports: [
            { name: 'http', containerPort: MODEL_HTTP_PORT, protocol: 'TCP' },
            { name: 'grpc', containerPort: GRPC_PORT, protocol: 'TCP' },
            { name: 'metrics', containerPort: METRICS_PORT, protocol: 'TCP' },
          ],
          // Probed every second: a replica started for a held call (scale from zero) takes calls
          // as soon as it answers, not up to a probe period later. A replica busy with calls may
          // answer a probe slowly: it leaves the Service only after about ten seconds of that.
          readinessProbe: {
            httpGet: { path: `/v2/models/${name}/ready`, port: 'http' },
            periodSeconds: 1,
            timeoutSeconds: 3,
            failureThreshold: 10,
          },
          livenessProbe: {
            httpGet: { path: '/v2/health/live', port: 'http' },
            periodSeconds: 10,
            failureThreshold: 3,
          },
          // Pulling and loading a large model can take many minutes (the puller runs meanwhile, in
          // this budget); liveness starts counting once the server is up.
          startupProbe: {
            httpGet: { path: '/v2/health/live', port: 'http' },
            periodSeconds: 1,
            failureThreshold: 1800,
          },
          // A replica going away (scale-down, rollout) leaves the Service's endpoints first and
          // keeps answering the calls already sent to it while kube-proxy catches up.
          lifecycle: { preStop: { sleep: { seconds: PRESTOP_SECONDS } } },
          resources: containerResources(model),
          volumeMounts: [
            { name: 'models', mountPath: MODELS_DIR, readOnly: true },
            { name: 'tmp', mountPath: '/tmp' },
          ],
          securityContext: restricted,
        },
        {
          name: PULL_CONTAINER,
          image: opts.pullerImage,
          command: ['sh', '-c', PULL_THEN_IDLE, PULL_CONTAINER],
          args: pullArgs,
          env: [{ name: 'TOLLGATE_PULLED', value: PULLED_MARKER }],
          ...(credentials ? { envFrom: [{ secretRef: { name: credentials } }] } : {}),
          volumeMounts: [{ name: 'models', mountPath: MODELS_DIR }],
          // It idles once the folder is pulled: a small request for the pod's life, room to pull.
          resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '512Mi' } },
          securityContext: restricted,
        },
      ],
      volumes: [
        { name: 'models', emptyDir: {} },
        { name: 'tmp', emptyDir: {} },
      ],
    },
  };
  // The hash of everything the pods run: stamped on the template (a changed spec rolls out) and on
  // the Deployment (a reconcile with nothing new skips the write).
  const hash = createHash('sha256')
    .update(JSON.stringify([template, podAnnotations, plan.replicas]))
    .digest('hex')
    .slice(0, 16);
  const withHash = {
    ...template,
    metadata: { ...template.metadata, annotations: { ...podAnnotations, [TEMPLATE_HASH_ANNOTATION]: hash } },
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: plan.workload,
      namespace: model.metadata.namespace,
      labels,
      annotations: { [TEMPLATE_HASH_ANNOTATION]: hash },
      ownerReferences: ownerRefs(model),
    },
    spec: {
      replicas: plan.replicas,
      selector: { matchLabels: workloadSelector(plan) },
      progressDeadlineSeconds: 600,
      revisionHistoryLimit: 3,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: withHash,
    },
  };
}

/** Quantities may be written as numbers in the Model; a container's resources take strings. */
function containerResources(model: Model): V1ResourceRequirements {
  const r = model.spec.resources;
  if (!r) return { requests: { cpu: '250m', memory: '512Mi' } };
  const strings = (q: Record<string, string | number> | undefined) =>
    q === undefined ? undefined : Object.fromEntries(Object.entries(q).map(([k, v]) => [k, String(v)]));
  const out: V1ResourceRequirements = {};
  const requests = strings(r.requests);
  const limits = strings(r.limits);
  if (requests) out.requests = requests;
  if (limits) out.limits = limits;
  return out;
}

/**
 * The model's Service: its HTTP and gRPC ports. Behind a sidecar both reach the sidecar, which
 * takes them on the pod's IP while MLServer keeps them on loopback.
 */
export function modelService(
  plan: Pick<RuntimePlan, 'model' | 'gateway' | 'workload' | 'version'>,
): V1Service {
  const { model } = plan;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: plan.workload,
      namespace: model.metadata.namespace,
      labels: labelsFor(plan),
      ownerReferences: ownerRefs(model),
      // Its cluster IP is routed: held until the route no longer names it (operator/route-hold.ts).
      finalizers: [ROUTE_FINALIZER],
    },
    spec: {
      type: 'ClusterIP',
      selector: workloadSelector(plan),
      ports: [
        { name: 'http', port: MODEL_HTTP_PORT, targetPort: SERVING_PORT, protocol: 'TCP' },
        { name: 'grpc', port: GRPC_PORT, targetPort: 'grpc', protocol: 'TCP' },
      ],
    },
  };
}
