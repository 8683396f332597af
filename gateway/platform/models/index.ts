import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../../common/logger.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import type { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import type { PlatformResourceHandler } from '../../routing/events-router.js';
import { DirModelStore } from './dir-store.js';
import { KubeModelStore } from './kube-store.js';
import { createModelsResource } from './resource.js';

export { createModelsResource, type ModelsResourceDeps } from './resource.js';
export type { ModelStore } from './store.js';

/**
 * The built-in `models` platform resource for one of the two deployments: Model resources in the
 * gateway's namespace on a cluster, or manifests in the state directory standalone. Pass the
 * result as `platformResources: new Map([['models', handler]])` to createGatewayServices.
 */
export function modelsPlatformResource(opts: {
  workflows: WorkflowRoutes;
  log: Logger;
  models: { kubeConfig: KubeConfig; namespace: string } | { stateDir: string };
}): PlatformResourceHandler {
  const store =
    'stateDir' in opts.models
      ? new DirModelStore(
          new ManifestDir(opts.models.stateDir, (file, err) =>
            opts.log.warn({ file, err }, 'invalid manifest ignored'),
          ),
        )
      : new KubeModelStore(opts.models.kubeConfig.makeApiClient(CustomObjectsApi), opts.models.namespace);
  return createModelsResource({ store, workflows: opts.workflows, log: opts.log });
}
