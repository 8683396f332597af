import type { Redis } from 'ioredis';
import { KeyIndexWriter } from '../common/apikey/index-writer.js';
import type { StoredKey } from '../common/crypto/key-file.js';
import { ReportChecker } from '../common/redis/load-reports.js';
import { readVersionFigures } from '../common/redis/version-figures.js';
import type { EntrySealer, EntryVerifier } from '../common/redis/sealed-entry.js';
import type { RouteWriter } from '../common/routes/workflow-routes.js';
import { ApiKeyReconciler } from './controllers/apikey-controller.js';
import { KeyFinalizers } from './controllers/key-finalizers.js';
import { ModelReconciler } from './controllers/model/reconciler.js';
import { RedisKeptNames } from './controllers/model/kept-names.js';
import { WorkflowServiceReconciler } from './controllers/workflow-service-controller.js';
import type { Reconciler } from './framework/controller.js';
import type { Runnable } from './framework/runnable.js';
import { UsageStatusSync } from './usage-status.js';
import type { OperatorOptions, OperatorSources } from './manager.js';
import { Autoscaler } from './scaling/autoscaler.js';
import { WorkflowAdmission } from './workflows/workflow-admission.js';

/** What the reconcilers share: Redis, the seal, one route writer and one view of the records. */
export interface TermDeps {
  sources: OperatorSources;
  redis: Redis;
  sealer: EntrySealer;
  verifier: EntryVerifier;
  routes: RouteWriter;
  signingKey: StoredKey;
  opts: OperatorOptions;
}

/**
 * What one leadership term runs (kubebuilder's main.go, its `SetupWithManager` calls): the
 * reconcilers, and the other work that needs the lease. Adding a reconciler is its own file and a
 * line here; the manager runs whatever this lists and knows none of them.
 */
export function setupTerm({ sources, redis, sealer, verifier, routes, signingKey, opts }: TermDeps): {
  reconcilers: Reconciler[];
  runnables: Runnable[];
} {
  const { log } = opts;
  const keysNamespace = opts.keysNamespace ?? opts.namespace;
  const workflows = new WorkflowAdmission(sources.workflows);
  const usage = new UsageStatusSync(sources.apiKeys, redis, log);
  const keyFinalizers = new KeyFinalizers(sources.apiKeys, log);
  const reconcilers = [
    new ModelReconciler({
      ...sources,
      workflows,
      routes,
      keptNames: new RedisKeptNames(redis, sealer, verifier),
      log,
      figures: (model, version, from, to) => readVersionFigures(redis, model, version, from, to),
      scaler: new Autoscaler({
        models: sources.models,
        redis,
        subscriber: redis.duplicate(),
        log,
        reports: new ReportChecker(signingKey),
        ...(opts.modelGateway ? { defaultGateway: opts.modelGateway } : {}),
        ...(opts.autoscaleTickMs === undefined ? {} : { tickMs: opts.autoscaleTickMs }),
      }),
      ...(opts.runtimeImage ? { runtimeImage: opts.runtimeImage } : {}),
      ...(opts.modelGateway ? { defaultGateway: opts.modelGateway } : {}),
      ...(opts.sidecarPlacement ? { sidecarPlacement: opts.sidecarPlacement } : {}),
    }),
    new ApiKeyReconciler(
      sources.apiKeys,
      sources.identities,
      new KeyIndexWriter(redis, sealer),
      sealer,
      keyFinalizers,
      keysNamespace === undefined ? undefined : { redis, verifier, namespace: keysNamespace },
    ),
    new WorkflowServiceReconciler({
      services: sources.services,
      workflows,
      routes,
      hold: sources.routeHold,
      address: sources.serviceAddress,
      events: sources.events,
      log,
    }),
  ];
  return {
    reconcilers,
    runnables: [
      keyFinalizers,
      {
        name: 'usage-status',
        needsLeader: true,
        start: async () => usage.start(opts.usageSyncMs ?? 30_000),
        stop: () => usage.stop(),
      },
    ],
  };
}
