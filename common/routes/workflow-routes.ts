import type { Redis } from 'ioredis';
import { z } from 'zod';
import { redisUnavailable } from '../redis/unavailable.js';
import { KEY_PREFIX, redisChannels, routeChangeTag } from '../redis/schema.js';
import { parseStored, routeSchema, type Route } from '../resources/grant.js';
import { sealedParts, type EntrySealer, type EntryVerifier } from '../redis/sealed-entry.js';
import { scanValues } from '../redis/scan-values.js';
import type { Workflow } from '../resources/workflow.js';
import { recordsById, type WorkflowRecords } from './workflow-records.js';

/**
 * The Redis route table. `RouteWriter` is the one way a route is written or removed, and only the
 * operator uses it (from labelled Services and Models). `WorkflowRoutes` reads the workflow half
 * for the management API (which workflows a user owns). Every change is announced on the routes
 * channel so gateway replicas drop their cached copy at once.
 */

// Write only when the route changes, and announce it in the same script, so a reconcile that finds
// nothing new costs one round trip and no gateway cache is invalidated for nothing. Sealed values
// differ on every write (ECDSA signatures are randomised), so the payload is compared; a forced
// write (a rebuild) replaces the entry anyway, repairing one whose seal was tampered with, but
// announces only a changed payload: a rebuild of an unchanged table (after any reconnect) would
// otherwise send every route to every gateway and sidecar, and empty their caches.
const PUT = `
local cur = redis.call('GET', KEYS[1])
local same = false
if cur then
  same = string.match(cur, '^tg1%.[^.]*%.[^.]*%.(.*)$') == ARGV[3]
end
if same and ARGV[4] ~= 'force' then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
if not same then redis.call('PUBLISH', ARGV[2], ARGV[5]) end
return 1`;

// Delete only the route the given source wrote (any route when no source is given): two resources
// must not remove each other's route.
const REMOVE = `
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if ARGV[1] ~= '' then
  local body = string.match(cur, '^tg1%.[^.]*%.[^.]*%.(.*)$') or cur
  local ok, route = pcall(cjson.decode, body)
  if ok and type(route) == 'table' and route.source ~= ARGV[1] then return 0 end
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1`;

/** The Redis route table (derived state: the operator rebuilds it from resources). */
export class RouteWriter {
  /** Every route is rewritten (not compared) until this is cleared: set by a rebuild. */
  private forced = false;
  /**
   * Where each source's workflow routes were when first asked this term (one SCAN for every
   * source), and those this writer put since: together every route a source may still have, for
   * `removeAllOf`. A writer lives one leadership term, and only the leader writes routes.
   */
  private earlier: Promise<Map<string, Set<string>>> | undefined;
  private readonly writtenBy = new Map<string, Set<string>>();

  constructor(
    private readonly redis: Redis,
    private readonly sealer: EntrySealer,
  ) {}

  /** Sets the route at `key`; true if it changed. */
  async put(key: string, route: Route): Promise<boolean> {
    // A route the gateways cannot parse would be "no such service" to them: refused here instead.
    const payload = JSON.stringify(routeSchema.parse(route));
    if (route.source !== undefined && key.startsWith(BDA_ROUTE_PREFIX)) {
      const keys = this.writtenBy.get(route.source) ?? new Set<string>();
      this.writtenBy.set(route.source, keys.add(key));
    }
    const sealed = await this.sealer.seal(key, payload);
    const mode = this.forced ? 'force' : 'compare';
    const tag = routeChangeTag(key);
    return (await this.redis.eval(PUT, 1, key, sealed, redisChannels.routes, payload, mode, tag)) === 1;
  }

  /** While on, `put` rewrites every route it is given, so a rebuild repairs tampered entries. */
  rewriteAll(on: boolean): void {
    this.forced = on;
  }

  /** Removes the route at `key` if `source` wrote it (any route without `source`); true if one was removed. */
  async remove(key: string, source?: string): Promise<boolean> {
    if (source !== undefined) this.writtenBy.get(source)?.delete(key);
    const tag = routeChangeTag(key);
    return (await this.redis.eval(REMOVE, 1, key, source ?? '', redisChannels.routes, tag)) === 1;
  }

  /**
   * The source of the route at `key`, as written (read unverified: only the operator's and the
   * gateways' Redis users may write a route, and a forged one names nothing the caller trusts).
   */
  async sourceAt(key: string): Promise<string | undefined> {
    const value = await this.redis.get(key);
    const payload = value === null ? undefined : sealedParts(value)?.payload;
    const route = payload === undefined ? undefined : parseStored(sourceOnly, payload);
    return route?.ok === true ? route.value.source : undefined;
  }

  /**
   * Removes every workflow route `source` wrote, under whatever key but those of `keep`: for the
   * rare writer that no longer knows its keys (relabelled, or its workflow changed, while no
   * operator ran). The route table is scanned once a term, whoever asks: a team making Services
   * over and over must not make the operator walk the whole keyspace for each. Resolves with the
   * count removed.
   */
  async removeAllOf(source: string, keep: ReadonlySet<string> = new Set()): Promise<number> {
    if (this.earlier === undefined) {
      const scanning = this.scanSources();
      this.earlier = scanning;
      scanning.catch(() => {
        if (this.earlier === scanning) this.earlier = undefined;
      });
    }
    const candidates = new Set([
      ...((await this.earlier).get(source) ?? []),
      ...(this.writtenBy.get(source) ?? []),
    ]);
    let removed = 0;
    // REMOVE checks the source again, atomically: a key since rewritten by another is left.
    for (const key of candidates) if (!keep.has(key) && (await this.remove(key, source))) removed++;
    // What is left of the source is what it keeps: nothing more of it stays in memory for the term.
    (await this.earlier)?.delete(source);
    const kept = [...candidates].filter((k) => keep.has(k));
    if (kept.length > 0) this.writtenBy.set(source, new Set(kept));
    else this.writtenBy.delete(source);
    return removed;
  }

  private async scanSources(): Promise<Map<string, Set<string>>> {
    const bySource = new Map<string, Set<string>>();
    await scanValues(this.redis, `${BDA_ROUTE_PREFIX}*`, (key, value) => {
      // Read unverified to find candidates.
      const payload = sealedParts(value)?.payload;
      const route = payload === undefined ? undefined : parseStored(sourceOnly, payload);
      if (route?.ok !== true) return;
      const keys = bySource.get(route.value.source) ?? new Set<string>();
      bySource.set(route.value.source, keys.add(key));
    });
    return bySource;
  }
}

/** What removeAllOf reads of a route: an entry of an older shape is found by its source all the same. */
const sourceOnly = z.looseObject({ source: z.string() });

export interface OwnedWorkflow {
  workflow: string;
  services: string[];
}

const BDA_ROUTE_PREFIX = `${KEY_PREFIX}route:bda:`;

/**
 * One read at a time per replica: a SCAN walks the whole keyspace whatever its pattern, and any
 * signed-in user may ask (the modules listing, a key's creation) on as many connections as they
 * like. A caller who asks while a read runs waits for the next one, which starts once that one
 * settles and answers everyone who asked meanwhile: each still gets what was there once it asked.
 */
function shared<T>(read: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  let queued: Promise<T> | undefined;
  const start = (): Promise<T> => {
    const started = read();
    running = started;
    const done = (): void => {
      if (running === started) running = undefined;
    };
    started.then(done, done);
    return started;
  };
  return () => {
    if (running === undefined) return start();
    queued ??= running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        queued = undefined;
        return start();
      });
    return queued;
  };
}

/** The workflow half of the route table, `tg:route:bda:<workflow>:<service>`, with its owners (read only). */
export class WorkflowRoutes {
  private readonly routes = shared(() => this.scan());
  private readonly held = shared(async () =>
    this.records === undefined ? new Map<string, Workflow>() : recordsById(await this.records.list()),
  );

  constructor(
    private readonly redis: Redis,
    private readonly verifier: EntryVerifier,
    /**
     * The Workflow records: where one holds a workflow id, its owner is the owner, routed or not
     * (the routes follow it). Without records (a route table written by hand), the routes' owners.
     */
    private readonly records?: WorkflowRecords,
  ) {}

  /** The workflows of `owner`, with their routed services, sorted. */
  async ownedBy(owner: string): Promise<OwnedWorkflow[]> {
    const byWorkflow = new Map<string, { services: string[]; allOwned: boolean }>();
    for (const route of await this.routes()) {
      const entry = byWorkflow.get(route.workflow) ?? { services: [], allOwned: true };
      entry.services.push(route.service);
      entry.allOwned &&= this.ownedByIt(route, owner);
      byWorkflow.set(route.workflow, entry);
    }
    const held = await this.held();
    const owned = [
      ...[...held]
        .filter(([, record]) => record.spec.owner === owner)
        .map(([workflow]) => ({
          workflow,
          services: [...(byWorkflow.get(workflow)?.services ?? [])].sort(),
        })),
      ...[...byWorkflow]
        .filter(([workflow, e]) => !held.has(workflow) && e.allOwned)
        .map(([workflow, e]) => ({ workflow, services: e.services.sort() })),
    ];
    return owned.sort((a, b) => (a.workflow < b.workflow ? -1 : 1));
  }

  /** Whether `workflow` is now another owner's than `owner`: it changed hands. */
  async ownedByAnother(workflow: string, owner: string): Promise<boolean> {
    const record = (await this.held()).get(workflow);
    if (record !== undefined) return record.spec.owner !== owner;
    return (await this.routes()).some((r) => r.workflow === workflow && !this.ownedByIt(r, owner));
  }

  /**
   * Whether the route is `owner`'s: it says so and its seal verifies. Only a route that names the
   * caller is verified (once per scan): one naming anyone else, or nothing readable, is not the
   * caller's whether or not it verifies.
   */
  private ownedByIt(route: ScannedRoute, owner: string): boolean {
    if (route.claimedOwner !== owner) return false;
    route.verified ??= this.verifier.open(route.key, route.value).ok;
    return route.verified;
  }

  private async scan(): Promise<ScannedRoute[]> {
    const found: ScannedRoute[] = [];
    try {
      await scanValues(this.redis, `${BDA_ROUTE_PREFIX}*`, (key, value) => {
        const [workflow, service] = key.slice(BDA_ROUTE_PREFIX.length).split(':');
        if (workflow === undefined || service === undefined) return;
        const payload = sealedParts(value)?.payload;
        const claimed = payload === undefined ? undefined : parseStored(routeSchema, payload);
        found.push({
          key,
          value,
          workflow,
          service,
          claimedOwner: claimed?.ok === true ? claimed.value.owner : undefined,
        });
      });
    } catch (cause) {
      throw redisUnavailable(cause, ROUTES_UNREACHABLE);
    }
    return found;
  }
}

/**
 * A route entry as scanned: the owner it claims, believed only once its seal verifies (`verified`,
 * found when first asked). One that cannot be read or does not verify (not the operator's) counts
 * as another owner's, so its workflow is offered to nobody and taken over by nobody, and it no
 * longer makes every listing fail (the gateway already treats it as an unknown service).
 */
interface ScannedRoute {
  key: string;
  value: string;
  workflow: string;
  service: string;
  claimedOwner: string | undefined;
  verified?: boolean;
}

const ROUTES_UNREACHABLE = 'the route table in Redis cannot be reached';
