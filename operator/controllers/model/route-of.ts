import { routeCohort } from '../../../common/resources/cohort.js';
import { MODEL_UID, modelRouteSource, type Route } from '../../../common/resources/grant.js';
import type { Model } from '../../../common/resources/model.js';
import { scalingOf } from '../../../common/resources/model-scaling.js';
import type { ServedVersion } from '../../../common/resources/model-versions.js';
import type { RuntimeState } from '../../serving/runtime-driver.js';
import type { StartingReplica } from '../../serving/starting-replicas.js';
import type { VersionResult } from './status.js';

/** The address of a cold route entry whose runtime has none while at zero (a reserved name). */
const NO_ADDRESS_YET = 'http://scaled-to-zero.invalid';

/** A version the route may name: served now, or at zero with calls waiting for it. */
interface Routable {
  version: ServedVersion;
  state: RuntimeState;
  cold: boolean;
}

/** What of a Model's versions can be routed now, and which answers its unversioned calls. */
export interface Routing {
  ready: Routable[];
  /** The version whose URL is the route's: the default, or the ready one with most traffic. */
  main: Routable | undefined;
  shadow: Routable | undefined;
}

/** A cold entry's starting replicas, when it has some. */
const listedStarting = (state: RuntimeState): { starting?: StartingReplica[] } =>
  state.starting === undefined || state.starting.length === 0 ? {} : { starting: state.starting };

export function routingOf(model: Model, results: VersionResult[]): Routing {
  // A version scaled to zero stays routed, marked cold: the gateway holds its calls while the
  // autoscaler starts a replica.
  const waits = scalingOf(model.spec)?.minReplicas === 0;
  const ready = results.flatMap((r): Routable[] => {
    if (r.obs.kind !== 'settings' || r.obs.runtime === undefined) return [];
    const runtime = { ...r.obs.runtime, url: r.obs.runtime.routeUrl ?? r.obs.runtime.url };
    // Served, and with an address (a Service made again has none for a moment).
    if (runtime.readyReplicas > 0 && runtime.url !== '')
      return [{ version: r.version, state: runtime, cold: false }];
    // At zero or starting from it: calls wait for the replica rather than being refused.
    if (!waits || runtime.failure !== undefined) return [];
    // A local runtime at zero has no address until it starts again; the gateway calls a cold
    // entry's address only once the route says it is warm.
    return [{ version: r.version, state: { ...runtime, url: runtime.url || NO_ADDRESS_YET }, cold: true }];
  });
  const shadowSpec = model.spec.shadow;
  // A shadow's answers are never returned: it never stands in for the default.
  const candidates =
    shadowSpec === undefined ? ready : ready.filter((r) => r.version.name !== shadowSpec.version);
  const main =
    candidates.find((r) => r.version.isDefault && !r.cold) ??
    [...candidates].sort(
      (a, b) => Number(a.cold) - Number(b.cold) || b.version.percent - a.version.percent,
    )[0];
  // A shadow at zero stays routed, marked cold: a drawn copy wakes it and is dropped.
  const shadow =
    shadowSpec === undefined ? undefined : ready.find((r) => r.version.name === shadowSpec.version);
  return { ready, main, shadow };
}

/**
 * The model's route: its URL is the main version's, and a versioned Model lists each routable
 * version with the share of unversioned inference calls it takes. One Redis value, so a shift is
 * atomic. `workflow` and `owner` only where the Workflow record admits the Model's namespace.
 */
export function routeOf(
  model: Model,
  { ready, main, shadow }: Routing & { main: Routable },
  admitted: { workflow: string; owner: string } | undefined,
): Route {
  const ref = { namespace: model.metadata.namespace ?? 'default', name: model.metadata.name };
  const policy = scalingOf(model.spec);
  const shadowSpec = model.spec.shadow;
  return {
    url: main.state.url,
    source: modelRouteSource(ref.namespace, ref.name),
    // A uid a hand-written manifest made unfit for a key or a prefix: its records by name alone.
    ...(model.metadata.uid !== undefined && MODEL_UID.test(model.metadata.uid)
      ? { uid: model.metadata.uid }
      : {}),
    // The route's workflow is what lets that workflow's bda keys call the model, so a tenant's
    // Model cannot pose as a service of another's workflow.
    ...(admitted === undefined ? {} : { workflow: admitted.workflow }),
    ...(admitted?.owner ? { owner: admitted.owner } : {}),
    ...(main.state.grantAudience === undefined ? {} : { grantAudience: main.state.grantAudience }),
    ...(main.cold ? { cold: true, ...listedStarting(main.state) } : {}),
    ...(policy?.minReplicas === 0
      ? { activationTimeoutSeconds: Math.round(policy.activationTimeoutMs / 1000) }
      : {}),
    ...(model.spec.logging === undefined ? {} : { logging: payloadLogging(model.spec.logging) }),
    ...(shadow === undefined || shadowSpec === undefined
      ? {}
      : {
          shadow: {
            name: shadowSpec.version,
            url: shadow.state.url,
            percent: shadowSpec.percent ?? 100,
            ...(shadowSpec.cohort === undefined
              ? {}
              : { cohort: routeCohort(shadowSpec.cohort, model.metadata.name, shadowSpec.version) }),
            ...(shadow.cold ? { cold: true } : {}),
          },
        }),
    ...(main.version.name !== undefined
      ? {
          versions: ready.map((r) => ({
            name: r.version.name ?? '',
            url: r.state.url,
            percent: r.version.percent,
            ...(r.version.cohort === undefined
              ? {}
              : { cohort: routeCohort(r.version.cohort, model.metadata.name, r.version.name ?? '') }),
            ...(r.cold ? { cold: true, ...listedStarting(r.state) } : {}),
          })),
        }
      : {}),
  };
}

/** A Model's spec.logging as its route carries it to the gateways: every call unless sampled. */
function payloadLogging(logging: NonNullable<Model['spec']['logging']>): NonNullable<Route['logging']> {
  return {
    sampleRate: logging.sampleRate ?? 1,
    ...(logging.redact === undefined || logging.redact.length === 0 ? {} : { redact: logging.redact }),
  };
}
