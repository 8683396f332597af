import { TollgateError } from '../../common/errors.js';
import type { RouteCohort } from '../../common/resources/cohort.js';
import { inCohort, type Caller } from './cohort.js';
import type { ResolvedRoute } from '../routing/route-table.js';
import type { ModelInfo } from './model-directory.js';

/** What a call asks of a model's versions: a named one, or (`split`) one drawn by the traffic split. */
export interface VersionWanted {
  version: string | undefined;
  split: boolean;
  /** false: a version at zero is not woken (readiness: it serves, once a call comes). */
  wake?: boolean;
}

/** The runtime chosen for a call. */
export interface Chosen {
  name?: string;
  origin: string;
  basePath: string;
  cold?: boolean;
  /** A canary the split drew: the default version, which answers the call if the canary fails it. */
  fallback?: Chosen;
  /** The traffic split chose it. */
  drawn?: boolean;
}

/**
 * The version an unversioned inference call goes to: the first whose cohort holds its caller, else
 * one drawn by the percentages; undefined when none takes it.
 */
export function drawVersion<V extends { percent: number; cohort?: RouteCohort }>(
  versions: readonly V[],
  caller: Caller,
  draw = Math.random(),
): V | undefined {
  for (const v of versions) if (v.cohort !== undefined && inCohort(v.cohort, caller)) return v;
  return splitTraffic(versions, draw);
}

/** One version drawn with the weights of its percentages; undefined when none takes any traffic. */
export function splitTraffic<V extends { percent: number }>(
  versions: readonly V[],
  draw = Math.random(),
): V | undefined {
  const total = versions.reduce((a, v) => a + v.percent, 0);
  if (total <= 0) return undefined;
  let left = draw * total;
  for (const v of versions) {
    if (v.percent <= 0) continue;
    left -= v.percent;
    if (left < 0) return v;
  }
  return versions.filter((v) => v.percent > 0).at(-1);
}

const noVersions = (model: string, version: string): TollgateError =>
  new TollgateError(
    'model_version_not_found',
    `model '${model}' has no versions; call /v2/models/${model}/... without /versions/${version}`,
  );

/** 404 for a version the Model does not list (a listed one is only not ready yet). */
export function checkVersionExists(model: string, version: string, info: ModelInfo | undefined): void {
  if (info?.versions?.includes(version)) return;
  if (info?.versions === undefined) throw noVersions(model, version);
  throw new TollgateError(
    'model_version_not_found',
    `model '${model}' has no version '${version}'; its versions are ${info.versions.join(', ')}`,
  );
}

export const notReady = (what: string): TollgateError =>
  new TollgateError('model_not_ready', `${what} has no ready replica yet; retry shortly`, {
    headers: { 'retry-after': '1' },
  });

/**
 * Which runtime answers: the version asked for; for an unversioned inference call, its caller's
 * cohort's version or one drawn by the traffic split; otherwise the route's own address (the default version when it is ready).
 * `find` is asked only to tell a version that does not exist from one not ready.
 */
export async function chooseVersion(
  model: string,
  route: ResolvedRoute,
  want: VersionWanted,
  caller: Caller,
  find: (model: string) => Promise<ModelInfo | undefined>,
): Promise<Chosen> {
  const versions = route.versions;
  if (versions === undefined) {
    if (want.version !== undefined) throw noVersions(model, want.version);
    return { origin: route.origin, basePath: route.basePath, cold: route.route.cold === true };
  }
  if (want.version !== undefined) {
    const found = versions.find((v) => v.name === want.version);
    if (found !== undefined) return found;
    checkVersionExists(model, want.version, await find(model));
    throw notReady(`version '${want.version}' of model '${model}'`);
  }
  const main = versions.find((v) => v.origin === route.origin && v.basePath === route.basePath);
  const fallback = main ?? { origin: route.origin, basePath: route.basePath };
  if (!want.split) return fallback;
  return withFallback(drawVersion(versions, caller) ?? fallback, main);
}

/**
 * What the split drew, marked so (its tries are the figures a rollout is judged on); a canary with
 * the default version to fall back on, when the default is ready.
 */
export function withFallback<V extends Chosen>(drawn: V, main: Chosen | undefined): V {
  const marked = { ...drawn, drawn: true };
  if (main === undefined || main.cold === true || drawn === main) return marked;
  return { ...marked, fallback: main };
}
