import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';
import type { RouteCohort } from '../../common/resources/cohort.js';
import { redisChannels, redisKeys, routeChangeTag } from '../../common/redis/schema.js';
import { parseStored, routeSchema, type Route } from '../../common/resources/grant.js';
import { indexRebuilding, redisUnavailable } from '../../common/redis/unavailable.js';
import { InvalidatedCache, type CacheInvalidation } from '../invalidation.js';
import type { EntryVerifier } from '../../common/redis/sealed-entry.js';

/** A route as the proxy needs it: the origin picks the connection pool, the base prefixes the path. */
export interface ResolvedRoute {
  route: Route;
  origin: string;
  /** The route URL's path without its trailing slash ("" for a bare origin). */
  basePath: string;
  /** A model with versions: each ready version's address and share of unversioned inference calls. */
  versions?: ResolvedVersion[];
  /** spec.shadow: the version that gets copies of a share of the answered calls. */
  shadow?: ResolvedVersion;
  /** Cold: the replicas starting, asked directly while calls are held (gateway/v2/activation.ts). */
  starting?: StartingReplica[];
}

/** A replica starting from zero: where it serves, and its pod's readiness probe. */
export interface StartingReplica {
  origin: string;
  basePath: string;
  probe: string;
  /** Epoch ms after which it is not followed: the operator lists it again on the pod's next change. */
  until: number;
}

export interface ResolvedVersion {
  name: string;
  origin: string;
  basePath: string;
  percent: number;
  /** Every unversioned inference call of these callers goes to it (spec.traffic's cohort, a rollout's). */
  cohort?: RouteCohort;
  /** No ready replica: scaled to zero, or starting from it. */
  cold?: boolean;
  starting?: StartingReplica[];
}

/** Where a model's V2 server answers: its origin (the connection pool) and the path prefix before /v2. */
export interface RuntimeAddress {
  origin: string;
  basePath: string;
  /** The runtime answers through a Tollgate sidecar: calls to it carry a grant for this audience. */
  grantAudience?: string;
  /** The version it serves, for a model with versions. */
  version?: string;
  /** No replica is ready (scaled to zero): nothing answers at this address yet. */
  cold?: boolean;
  /**
   * The split drew this version, a canary: where the call goes instead if the canary fails it (the
   * default version's runtime). The caller asked for the model, not for the canary.
   */
  fallback?: RuntimeAddress;
  /**
   * The traffic split chose it (an unversioned inference call): its tries count in the figures a
   * rollout is judged on. A call that names its version does not.
   */
  drawn?: boolean;
}

interface Entry {
  resolved: ResolvedRoute | null;
  /** routeChangeTag of its Redis key: what the routes channel names it by. */
  tag: string;
}

/** How long "no such route" is remembered: short, in case a writer forgets to publish. */
const MISSING_TTL_MS = 1_000;

/**
 * Workflow service and model routes (`tg:route:bda:<wf>:<svc>`, `tg:route:model:<name>`), read from Redis and cached in process
 * until the routes channel says the Redis key changed.
 */
export class RouteTable {
  private readonly found: InvalidatedCache<Entry>;
  private readonly missing: InvalidatedCache<Entry>;
  /** Each cached route's Redis key by its change tag, one map per cache: an entry leaves with it. */
  private readonly foundKeys = new Map<string, string>();
  private readonly missingKeys = new Map<string, string>();
  /** Rechecks of routes remembered as missing, under way. */
  private readonly rechecks = new Map<string, Promise<ResolvedRoute | null>>();

  constructor(
    private readonly redis: Redis,
    /** Only routes the operator sealed are followed. */
    private readonly verifier: EntryVerifier,
    invalidation: CacheInvalidation,
    private readonly log: Logger,
    cacheEntries: number,
  ) {
    this.found = new InvalidatedCache<Entry>(invalidation, {
      max: cacheEntries,
      onDrop: (dropped) => this.foundKeys.delete(dropped.tag),
    });
    this.missing = new InvalidatedCache<Entry>(invalidation, {
      max: cacheEntries,
      ttlMs: MISSING_TTL_MS,
      onDrop: (dropped) => this.missingKeys.delete(dropped.tag),
    });
    // Messages on the routes channel carry the change tag of the route that changed.
    invalidation.on(redisChannels.routes, (tag) => {
      this.found.delete(this.foundKeys.get(tag));
      this.missing.delete(this.missingKeys.get(tag));
    });
  }

  /** The service's route, or null when none is registered; rejects with 503 if Redis is down. */
  bda(workflow: string, service: string): Promise<ResolvedRoute | null> | ResolvedRoute | null {
    return this.get(redisKeys.bdaRoute(workflow, service));
  }

  /**
   * A model runtime's route (present only while it has ready replicas), or null. `recheck`: one
   * remembered as missing is read again.
   */
  model(name: string, recheck = false): Promise<ResolvedRoute | null> | ResolvedRoute | null {
    return this.get(redisKeys.modelRoute(name), recheck);
  }

  private get(redisKey: string, recheck = false): Promise<ResolvedRoute | null> | ResolvedRoute | null {
    if (this.redis.status === 'ready') {
      const hit = this.found.get(redisKey) ?? (recheck ? undefined : this.missing.get(redisKey));
      if (hit !== undefined) return hit.resolved;
    }
    if (!recheck) return this.lookup(redisKey);
    // Calls refused at once for the same route share one read.
    let reading = this.rechecks.get(redisKey);
    if (reading === undefined) {
      reading = this.lookup(redisKey).finally(() => this.rechecks.delete(redisKey));
      this.rechecks.set(redisKey, reading);
    }
    return reading;
  }

  private async lookup(redisKey: string): Promise<ResolvedRoute | null> {
    const epoch = this.found.epoch;
    const missingEpoch = this.missing.epoch;
    let raw: string | null;
    let indexBuilt: string | null;
    try {
      [raw, indexBuilt] = (await this.redis.mget(redisKey, redisKeys.indexMarker)) as [
        string | null,
        string | null,
      ];
    } catch (err) {
      throw redisUnavailable(err);
    }
    // No route while the index is being rebuilt proves nothing: retry, and remember nothing.
    if (raw === null && indexBuilt === null) throw indexRebuilding();
    const resolved = raw === null ? null : this.parse(redisKey, raw);
    const entry = { resolved, tag: routeChangeTag(redisKey) };
    if (resolved === null) {
      if (this.missing.set(redisKey, entry, missingEpoch)) this.missingKeys.set(entry.tag, redisKey);
    } else if (this.found.set(redisKey, entry, epoch)) this.foundKeys.set(entry.tag, redisKey);
    return resolved;
  }

  private parse(redisKey: string, raw: string): ResolvedRoute | null {
    const opened = this.verifier.open(redisKey, raw);
    const parsed = opened.ok ? parseStored(routeSchema, opened.payload) : opened;
    if (!parsed.ok) {
      this.log.error(
        { redisKey, issue: parsed.issue },
        'route entry refused (corrupt or not sealed by the operator); treating the service as unknown',
      );
      return null;
    }
    return resolveRoute(parsed.value);
  }
}

export function resolveRoute(route: Route): ResolvedRoute {
  const resolved: ResolvedRoute = { route, ...address(route.url), ...followedStarting(route) };
  if (route.versions !== undefined)
    resolved.versions = route.versions.map((v) => ({
      name: v.name,
      percent: v.percent,
      ...(v.cohort === undefined ? {} : { cohort: v.cohort }),
      ...address(v.url),
      ...(v.cold === true ? { cold: true, ...followedStarting(v) } : {}),
    }));
  if (route.shadow !== undefined)
    resolved.shadow = {
      name: route.shadow.name,
      percent: route.shadow.percent,
      ...(route.shadow.cohort === undefined ? {} : { cohort: route.shadow.cohort }),
      ...address(route.shadow.url),
      ...(route.shadow.cold === true ? { cold: true } : {}),
    };
  return resolved;
}

function followedStarting(entry: {
  cold?: boolean;
  starting?: Array<{ url: string; probe: string; until: number }>;
}): {
  starting?: StartingReplica[];
} {
  if (entry.cold !== true || entry.starting === undefined) return {};
  // Both addresses are one pod's: an entry that says otherwise is not followed.
  const starting = entry.starting.flatMap((s) => {
    const at = address(s.url);
    return new URL(s.probe).hostname === new URL(s.url).hostname
      ? [{ ...at, probe: s.probe, until: s.until }]
      : [];
  });
  return starting.length === 0 ? {} : { starting };
}

function address(raw: string): { origin: string; basePath: string } {
  const url = new URL(raw);
  return { origin: url.origin, basePath: url.pathname.replace(/\/+$/, '') };
}
