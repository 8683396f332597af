import { TollgateError } from '../../common/errors.js';
import { SCALING_DEFAULTS } from '../../common/resources/model-scaling.js';
import { reachable } from '../proxy/reachable.js';
import type { ResolvedRoute, RuntimeAddress, StartingReplica } from '../routing/route-table.js';
import type { Activator } from './activator.js';
import type { Caller } from './cohort.js';
import { drawVersion, withFallback, type Chosen } from './versions.js';

/**
 * Where a model's route is read: the route table, or a sidecar's one runtime. `recheck`: a route remembered as missing is asked for again (a call is about
 * to be refused for the want of one).
 */
export type ModelRouteLookup = (
  name: string,
  recheck?: boolean,
) => Promise<ResolvedRoute | null> | ResolvedRoute | null;

/** How long a held call waits for a replica: the Model's, which its route carries. */
const activationTimeoutMs = (route: ResolvedRoute | null): number =>
  (route?.route.activationTimeoutSeconds ?? SCALING_DEFAULTS.activationTimeoutSeconds) * 1000;

/**
 * Holds a call while the model (or one `version` of it, "" for any) is at zero, until `pick` finds
 * a ready runtime in its route that takes a connection, or a replica the route lists as starting
 * answers its readiness probe (the kubelet asks it once a second, and its answer then still has
 * the pod's status, the Deployment's and the route to go through). Then picks once more for this
 * call (calls held together share the wait, not the choice: each draws its own version), or takes
 * the starting replica that answered. Undefined if none is ready after all.
 */
async function heldUntilWarm<T extends { origin: string }>(
  activator: Pick<Activator, 'hold' | 'firstReady'>,
  lookup: ModelRouteLookup,
  model: string,
  version: string,
  pick: (route: ResolvedRoute | null) => T | undefined,
  early: (replica: StartingReplica) => T,
): Promise<T | undefined> {
  const timeoutMs = activationTimeoutMs(await lookup(model));
  const warm = await activator.hold(model, version, timeoutMs, async () => {
    const route = await lookup(model);
    const picked = pick(route);
    if (picked !== undefined) return (await reachable(picked.origin)) ? {} : undefined;
    const replica = await activator.firstReady(startingOf(route, version));
    return replica === undefined ? undefined : { early: replica };
  });
  const picked = pick(await lookup(model));
  if (picked !== undefined) return picked;
  return warm.early === undefined ? undefined : early(warm.early);
}

/** The replicas a cold version (or unversioned model, "") lists as starting, not yet expired. */
function startingOf(route: ResolvedRoute | null, version: string): StartingReplica[] {
  if (route === null) return [];
  const listed =
    version === ''
      ? route.route.cold === true
        ? route.starting
        : undefined
      : route.versions?.find((v) => v.name === version && v.cold === true)?.starting;
  const now = Date.now();
  return (listed ?? []).filter((r) => r.until > now);
}

/**
 * A version (or an unversioned model, `version` undefined) with no ready replica because it was
 * scaled to zero: the call is held while the operator starts one, then goes to it.
 */
export async function warmed(
  activator: Pick<Activator, 'hold' | 'firstReady'>,
  lookup: ModelRouteLookup,
  model: string,
  version: string | undefined,
  again = true,
): Promise<Chosen> {
  const chosen = await heldUntilWarm(
    activator,
    lookup,
    model,
    version ?? '',
    (route): Chosen | undefined => {
      if (route === null) return undefined;
      if (version === undefined) return route.route.cold === true ? undefined : route;
      return route.versions?.find((v) => v.name === version && v.cold !== true);
    },
    ({ origin, basePath }): Chosen => ({
      ...(version === undefined ? {} : { name: version }),
      origin,
      basePath,
    }),
  );
  // Ready a moment ago and gone again (scaled back down, or the route rewritten): once more.
  if (chosen === undefined && again) return warmed(activator, lookup, model, version, false);
  if (chosen === undefined) {
    throw new TollgateError('model_scaling_up', `model '${model}' is starting a replica; retry shortly`, {
      headers: { 'retry-after': '5' },
    });
  }
  return chosen;
}

/**
 * Where a workflow's call to its model goes: where /v2 would send it. The workflow route names the
 * model's main runtime (`routed`); a model of this workflow with versions takes the traffic split
 * (its caller's cohort first), and one at zero is held until a replica is ready.
 */
export async function workflowRuntime(
  activator: Pick<Activator, 'hold' | 'firstReady'>,
  lookup: ModelRouteLookup,
  model: string,
  workflow: string,
  routed: RuntimeAddress,
  caller: Caller,
): Promise<RuntimeAddress> {
  const audience = routed.grantAudience === undefined ? {} : { grantAudience: routed.grantAudience };
  const pick = (route: ResolvedRoute | null): RuntimeAddress | undefined => {
    if (route === null) return undefined;
    if (route.versions === undefined)
      return route.route.cold === true
        ? undefined
        : { origin: route.origin, basePath: route.basePath, ...audience };
    const v = drawVersion(
      route.versions.filter((x) => x.cold !== true),
      caller,
    );
    if (v === undefined) return undefined;
    const main = route.versions.find((x) => x.origin === route.origin && x.basePath === route.basePath);
    const { fallback } = withFallback<Chosen>(v, main);
    return {
      origin: v.origin,
      basePath: v.basePath,
      version: v.name,
      drawn: true,
      ...audience,
      ...(fallback === undefined
        ? {}
        : {
            fallback: {
              origin: fallback.origin,
              basePath: fallback.basePath,
              ...(fallback.name === undefined ? {} : { version: fallback.name }),
              ...audience,
            },
          }),
    };
  };
  const route = await lookup(model);
  // The model's own route decides only for a model of this workflow (never another's runtime).
  if (route === null || route.route.workflow !== workflow) return routed;
  if (route.versions === undefined && route.route.cold !== true) return routed;
  // The route's own starting replicas are its main version's: the calls count as that version's.
  const main = route.versions?.find((x) => x.origin === route.origin && x.basePath === route.basePath);
  const early = ({ origin, basePath }: StartingReplica): RuntimeAddress => ({
    origin,
    basePath,
    ...audience,
    ...(main === undefined ? {} : { version: main.name }),
  });
  return pick(route) ?? (await heldUntilWarm(activator, lookup, model, '', pick, early)) ?? routed;
}
