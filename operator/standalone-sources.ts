import type { z } from 'zod';
import type { Logger } from '../common/logger.js';
import { API_KEY_PLURAL, apiKeySchema } from '../common/resources/apikey.js';
import type { ManifestDir } from '../common/resources/manifest-dir.js';
import { MODEL_PLURAL, modelSchema, type Model } from '../common/resources/model.js';
import { SERVICES_PLURAL, workflowServiceManifestSchema } from '../common/resources/workflow-service.js';
import { WORKFLOW_PLURAL, workflowSchema, type Workflow } from '../common/resources/workflow.js';
import type { ApiKeyResource, IdentityResource } from './controllers/apikey-controller.js';
import { IDENTITY_PLURAL, identitySchema } from '../common/resources/identity.js';
import { annotatedServiceAddress } from './controllers/workflow-service-controller.js';
import { LogEventRecorder } from './events.js';
import type { OperatorSources } from './manager.js';
import type { RuntimeDriver } from './serving/runtime-driver.js';
import { ManifestResourceSource } from './framework/manifest-source.js';
import { ProcessEnvCredentials } from './storage/credentials.js';
import { noRouteHold } from './route-hold.js';

/**
 * Standalone mode's side of the operator's seam (kube-sources.ts is the cluster's): Models,
 * ApiKeys and workflow Services are manifests in the state directory, routed to the URL their
 * annotation names; events go to the log; storage credentials come from the environment.
 */
export function standaloneSources(
  manifests: ManifestDir,
  runtime: RuntimeDriver,
  log: Logger,
): OperatorSources {
  return {
    models: new ManifestResourceSource<Model>(manifests.collection<Model>(MODEL_PLURAL, modelSchema), log),
    apiKeys: new ManifestResourceSource<ApiKeyResource>(
      manifests.collection<ApiKeyResource>(API_KEY_PLURAL, apiKeySchema as z.ZodType<ApiKeyResource>),
      log,
    ),
    identities: new ManifestResourceSource<IdentityResource>(
      manifests.collection<IdentityResource>(IDENTITY_PLURAL, identitySchema as z.ZodType<IdentityResource>),
      log,
    ),
    services: new ManifestResourceSource(
      manifests.collection(SERVICES_PLURAL, workflowServiceManifestSchema),
      log,
    ),
    workflows: new ManifestResourceSource<Workflow>(
      manifests.collection(WORKFLOW_PLURAL, workflowSchema),
      log,
    ),
    routeHold: noRouteHold,
    serviceAddress: annotatedServiceAddress,
    runtime,
    events: new LogEventRecorder(log.child({ component: 'operator' })),
    credentials: new ProcessEnvCredentials(),
  };
}
