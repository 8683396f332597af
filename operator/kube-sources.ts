import type { KubeConfig } from '@kubernetes/client-node';
import { API_KEY_GROUP, API_KEY_PLURAL, API_KEY_VERSION, apiKeySchema } from '../common/resources/apikey.js';
import type { Logger } from '../common/logger.js';
import {
  MODEL_GROUP,
  MODEL_PLURAL,
  MODEL_VERSION,
  modelSchema,
  type Model,
} from '../common/resources/model.js';
import {
  compactApiKey,
  type ApiKeyResource,
  type IdentityResource,
} from './controllers/apikey-controller.js';
import {
  IDENTITY_GROUP,
  IDENTITY_PLURAL,
  IDENTITY_VERSION,
  identitySchema,
} from '../common/resources/identity.js';
import type { WorkflowService } from '../common/resources/workflow-service.js';
import {
  WORKFLOW_PLURAL,
  WORKFLOW_VERSION,
  workflowSchema,
  type Workflow,
} from '../common/resources/workflow.js';
import { clusterServiceAddress, WORKFLOW_SELECTOR } from './controllers/workflow-service-controller.js';
import { KubeEventRecorder } from './events.js';
import type { OperatorSources } from './manager.js';
import { KubeRuntimeDriver } from './serving/kube-runtime.js';
import type { WorkloadOptions } from './serving/model-workload.js';
import { KubeCustomResourceSource, KubeLabelledSource } from './framework/kube-source.js';
import type { Resource } from './framework/resource-source.js';
import { KubeSecretCredentials } from './storage/credentials.js';
import { KubeRouteHold } from './route-hold.js';

/** The Kubernetes side of the seam: informers, Deployments, core Events, credentials Secrets. */
export function kubeSources(
  kc: KubeConfig,
  log: Logger,
  opts: WorkloadOptions & {
    namespace?: string;
    /** Lets Models read file:// folders and loopback stores: tests only (see KubeSecretCredentials). */
    sameMachine?: boolean;
    /** The operator's own namespace, where Models name only Secrets labelled for them. */
    ownNamespace?: string;
    /**
     * Where ApiKeys and Identities are believed: the release's namespace, where the management
     * API writes them. A key is an index entry with whatever roles and owner it says, so one
     * written elsewhere (by a team given Tollgate's kinds in its own namespace) must mint nothing.
     * Unset, the Models' namespace (a test's operator, which has no release).
     */
    keysNamespace?: string;
  },
): OperatorSources {
  // A custom resource's informer source; objects that do not match the kind's schema are left out.
  const customSource = <T extends Resource>(
    place: { group: string; version: string; plural: string },
    schema: { safeParse(raw: unknown): { success: boolean; data?: unknown; error?: unknown } },
    kind: string,
    keep: (parsed: T) => T = (parsed) => parsed,
    namespace: string | undefined = opts.namespace,
  ): KubeCustomResourceSource<T> =>
    new KubeCustomResourceSource<T>(
      kc,
      place,
      (raw) => {
        const r = schema.safeParse(raw);
        if (r.success) return keep(r.data as T);
        const name = (raw as { metadata?: { name?: string } } | undefined)?.metadata?.name;
        log.warn({ kind, name, err: r.error }, 'ignoring a resource that does not match its schema');
        return undefined;
      },
      log,
      namespace,
    );
  const keysNamespace = opts.keysNamespace ?? opts.namespace;
  const routeHold = new KubeRouteHold(kc, opts.namespace);
  return {
    models: customSource<Model>(
      { group: MODEL_GROUP, version: MODEL_VERSION, plural: MODEL_PLURAL },
      modelSchema,
      'Model',
    ),
    apiKeys: customSource<ApiKeyResource>(
      { group: API_KEY_GROUP, version: API_KEY_VERSION, plural: API_KEY_PLURAL },
      apiKeySchema,
      'ApiKey',
      compactApiKey,
      keysNamespace,
    ),
    identities: customSource<IdentityResource>(
      { group: IDENTITY_GROUP, version: IDENTITY_VERSION, plural: IDENTITY_PLURAL },
      identitySchema,
      'Identity',
      undefined,
      keysNamespace,
    ),
    services: new KubeLabelledSource<WorkflowService>(
      kc,
      'services',
      WORKFLOW_SELECTOR,
      (raw) => raw as WorkflowService,
      log,
      opts.namespace,
      (before, after) => routedView(before) !== routedView(after),
    ),
    // Cluster-scoped: read across namespaces even by an operator that watches one.
    workflows: workflowRecords(kc, log),
    routeHold,
    serviceAddress: clusterServiceAddress,
    runtime: new KubeRuntimeDriver(kc, { pullerImage: opts.pullerImage }, log, routeHold, opts.namespace),
    events: new KubeEventRecorder(kc, log),
    credentials: new KubeSecretCredentials(kc, {
      sameMachine: opts.sameMachine ?? false,
      ...(opts.ownNamespace === undefined ? {} : { ownNamespace: opts.ownNamespace }),
    }),
  };
}

/** The Workflow records (cluster-scoped): the reconcilers' and the webhook's view of who serves what. */
export function workflowRecords(kc: KubeConfig, log: Logger): KubeCustomResourceSource<Workflow> {
  return new KubeCustomResourceSource<Workflow>(
    kc,
    { group: MODEL_GROUP, version: WORKFLOW_VERSION, plural: WORKFLOW_PLURAL },
    (raw) => {
      const r = workflowSchema.safeParse(raw);
      if (r.success) return r.data;
      log.warn({ kind: 'Workflow', err: r.error }, 'ignoring a resource that does not match its schema');
      return undefined;
    },
    log,
  );
}

/**
 * What of a workflow Service its reconciler reads (its claim, its address, its finalizer, its
 * deletion): an edit of anything else (an annotation of the team's, its status) reconciles nothing.
 */
function routedView(svc: WorkflowService): string {
  const { labels, annotations, finalizers, deletionTimestamp } = svc.metadata;
  const ours = Object.entries(annotations ?? {}).filter(([k]) => k.startsWith('tollgate.dev/'));
  return JSON.stringify([labels, ours, finalizers, deletionTimestamp, svc.spec]);
}
