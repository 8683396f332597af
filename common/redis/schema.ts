import { createHash } from 'node:crypto';

/**
 * The Redis schema, shared by the operator (which rebuilds it from Kubernetes resources) and the
 * gateway (which reads it on every request). Redis holds derived state only: everything here can
 * be rebuilt from the resources. The values' shapes are the zod schemas in
 * common/resources/grant.ts. The key index entries and the routes are sealed with the signing key
 * (common/redis/sealed-entry.ts): Redis is reachable by more parties than the operator, and an
 * entry it holds is believed only if it verifies. Who writes what, and why:
 *
 *   key            value                     written by
 *   tg:key:<hash>  KeyGrant (keyGrantSchema) KeyIndexWriter only: the operator's ApiKey
 *                                            reconciler from ApiKey resources, and the management
 *                                            API right after it wrote the resource (so a new key
 *                                            works at once) and on delete
 *   tg:route:*     Route (routeSchema)       RouteWriter, used by the operator only: its Model and
 *                                            workflow Service reconcilers (labelled Services on a
 *                                            cluster; in standalone mode the Service manifests
 *                                            that `tollgate route add` writes). The management API
 *                                            reads the workflow half (WorkflowRoutes) and never
 *                                            writes it
 *   tg:usage:<id>  hash lastUsed, count,     the gateway's UsageRecorder; the operator reads it
 *                  refused
 *   tg:usage:<id>:m:<day>    hash            the UsageRecorder: per minute of a UTC day, fields
 *                                            <minute>r (requests) and <minute>x (refusals); 26 h TTL
 *   tg:usage:<id>:h:<month>  hash            the same per hour of a UTC month, <dd>-<hh>r/x; 62 d TTL
 *   tg:usage:<id>:ep zset                    requests per endpoint, the top 100 kept
 *   tg:model-usage:<ns>/<model>:m:<day> hash the gateway's ModelUsageRecorder (a Model's namespace and
 *                                            name: modelAccount): per minute of a UTC
 *                                            day, <minute>r (calls), <minute>e (errors), <minute>l
 *                                            (summed latency, ms); 26 h TTL; the panel's Models page
 *   tg:shadow-usage:<ns>/<model>:m:<day> hash     central gateways' ShadowTraffic: per minute, <minute>sc
 *                                            (copies), sa (agreed), sf (failed), sl and sp (summed
 *                                            shadow and serving times, ms); 26 h TTL. Apart from
 *                                            model-usage, which a sidecar's user may increment
 *   tg:vfig:<ns>/<model>:<bucket> hash            central gateways' VersionFigureRecorder: each version's
 *                                            calls, failures and latency per 10 s, what spec.rollout
 *                                            is judged on (common/redis/version-figures.ts); 1 h TTL
 *   tg:rl:*        counter                   the gateway's RateLimiter
 *   tg:cr:*        counter                   the gateway's RateLimiter (credits spent per period)
 *   tg:cr:<account>:holder  string           the management API: a digest of the owner of the
 *                                            identity whose counters these are (credits.ts)
 *   tg:index:built marker                    the operator, after a full rebuild
 *   tg:index:building token                  the operator, while a rebuild runs (the marker is set
 *                                            only if its token survived)
 *   tg:grant:used:<jti>      string          a sidecar, with NX and a TTL past the grant's expiry:
 *                                            a grant spent at one replica is refused at every other
 *   tg:wh:*        the webhook deliveries    central gateways (gateway/webhooks/deliveries.ts): the
 *                                            queue by due time, each message, each endpoint's log
 *   tg:ux:*        usage for export          central gateways only (gateway/usage-export/): each
 *                                            minute's figures per key, identity and target as its
 *                                            calls are flushed (ux:m:<minute>, listed in ux:open),
 *                                            closed once the minute is over into the stream
 *                                            ux:events, and each endpoint's place in it (ux:push:*).
 *                                            A sidecar's user may write none of it: a team reads
 *                                            that password, and must not bill another team
 */
export const KEY_PREFIX = 'tg:';

export const redisKeys = {
  /** String: JSON KeyGrant, by the SHA-256 (hex) of the key. */
  apiKey: (hash: string) => `${KEY_PREFIX}key:${hash}`,
  /** Hash: { lastUsed: ISO time, count: integer } per key id. */
  keyUsage: (id: string) => `${KEY_PREFIX}usage:${id}`,
  /** Hash: requests (`<minute>r`) and refusals (`<minute>x`) per minute of one UTC day (yyyy-mm-dd). */
  keyUsageMinutes: (id: string, day: string) => `${KEY_PREFIX}usage:${id}:m:${day}`,
  /** Hash: the same per hour of one UTC month (yyyy-mm), fields `<dd>-<hh>r` and `<dd>-<hh>x`. */
  keyUsageHours: (id: string, month: string) => `${KEY_PREFIX}usage:${id}:h:${month}`,
  /** Sorted set: requests per endpoint (`GET /events/bda/wf/svc`), the top 100 kept. */
  keyUsageEndpoints: (id: string) => `${KEY_PREFIX}usage:${id}:ep`,
  /** Hash: a model's calls (`<minute>r`), errors (`<minute>e`) and latency sum in ms (`<minute>l`) per minute of one UTC day. */
  modelUsageMinutes: (model: string, day: string) => `${KEY_PREFIX}model-usage:${model}:m:${day}`,
  /** Hash: a model's shadow copies per minute of a UTC day (central gateways only). */
  shadowUsageMinutes: (model: string, day: string) => `${KEY_PREFIX}shadow-usage:${model}:m:${day}`,
  /** String counter for a fixed rate-limit window: key id + window start (epoch seconds). */
  rateLimit: (id: string, windowStart: number) => `${KEY_PREFIX}rl:${id}:${windowStart}`,
  /** Credits a key spent in a period (`all`, a UTC day `d2026-11-25` or month `m2026-11`). */
  creditsSpent: (id: string, period: string) => `${KEY_PREFIX}cr:${id}:${period}`,
  /**
   * String: a digest of the owner of the identity whose counters `account` holds (set when the
   * management API makes it; never a credit period's name, which starts with a letter and a digit).
   */
  countersHolder: (account: string) => `${KEY_PREFIX}cr:${account}:holder`,
  /**
   * A named limit's window: more segments than `rateLimit`'s, so the two never meet, and its
   * length among them, so a limit given another window by an administrator starts a new counter.
   */
  namedLimit: (id: string, name: string, windowSeconds: number, windowStart: number) =>
    `${KEY_PREFIX}rl:${id}:${name}:${windowSeconds}:${windowStart}`,
  /** List: events raised on the data plane, waiting to be fanned out to the endpoints (JSON each). */
  webhookInbox: `${KEY_PREFIX}wh:inbox`,
  /** Sorted set: webhook message ids by when their next attempt is due (epoch ms). */
  webhookDue: `${KEY_PREFIX}wh:due`,
  /** Hash: one webhook message (its endpoint, body, attempts and last outcome). */
  webhookMessage: (id: string) => `${KEY_PREFIX}wh:msg:${id}`,
  /** Sorted set: an endpoint's recent message ids by creation time (the newest 200 kept). */
  webhookLog: (webhook: string) => `${KEY_PREFIX}wh:log:${webhook}`,
  /** Hash: user → JSON {admin, at}: their administrator standing when last seen (gateway/webhooks/admin-rights.ts). */
  webhookAdmins: `${KEY_PREFIX}wh:admins`,
  /** String, NX with a TTL: a once-only event already sent (a key's expiry announced to an endpoint). */
  webhookOnce: (what: string) => `${KEY_PREFIX}wh:once:${what}`,
  /**
   * Hash: one epoch minute's usage for export, field `<metric>|<group JSON>` (metric `c` calls,
   * `w` rows, `k` credits, `x:<code>` refusals): central gateways add to it at each flush.
   */
  usageExportMinute: (minute: number) => `${KEY_PREFIX}ux:m:${minute}`,
  /** String with a TTL: a meter's flush already applied (a retried one is not counted twice). */
  usageExportBatch: (batch: string) => `${KEY_PREFIX}ux:batch:${batch}`,
  /** Sorted set: the minutes with figures not yet closed into the stream, scored by the minute. */
  usageExportOpen: `${KEY_PREFIX}ux:open`,
  /** Stream: one entry per closed minute, key, identity and target; its id is the event's id. */
  usageExportStream: `${KEY_PREFIX}ux:events`,
  /** String: the stream id below which entries were trimmed (a cursor before it has lost events). */
  usageExportTrimmed: `${KEY_PREFIX}ux:trimmed`,
  /** String with a TTL: which central gateway replica closes minutes now. */
  usageExportCloseLock: `${KEY_PREFIX}ux:close-lock`,
  /** String with a TTL: which central gateway replica pushes usage to the endpoints now. */
  usageExportPushLock: `${KEY_PREFIX}ux:push-lock`,
  /** Hash: an endpoint's place in the stream (`cursor`) and the message carrying what follows it. */
  usageExportPush: (webhook: string) => `${KEY_PREFIX}ux:push:${webhook}`,
  /** String: JSON Route for a workflow service. */
  bdaRoute: (workflow: string, service: string) => `${KEY_PREFIX}route:bda:${workflow}:${service}`,
  /** String: JSON Route for a model's runtime (present only while it has ready replicas). */
  modelRoute: (model: string) => `${KEY_PREFIX}route:model:${model}`,
  /**
   * String, sealed, with a TTL: a deleted Model's name kept for its namespace a while
   * (operator/controllers/model/names.ts), so the keeping survives an operator restart.
   */
  keptModelName: (model: string) => `${KEY_PREFIX}name-kept:${model}`,
  /**
   * Hash: each gateway's load on a model's versions, field `<gateway>|<version>`, value JSON
   * LoadReport (common/resources/model-scaling.ts); read by the operator's autoscaler.
   */
  modelLoad: (model: string) => `${KEY_PREFIX}model-load:${model}`,
  /**
   * The same hash, written by sidecars. Apart because a sidecar's Redis user can erase what it may
   * write (`PEXPIRE 0`, `HSET` over a field), and any team reads that user's password: here a team
   * can wipe only sidecars' reports, never the central gateways'.
   */
  sidecarModelLoad: (model: string) => `${KEY_PREFIX}sidecar-load:${model}`,
  /**
   * Written by the operator after a full rebuild. Its absence means Redis was flushed or
   * restarted empty, and the operator rebuilds the index and the routes.
   */
  indexMarker: `${KEY_PREFIX}index:built`,
  /**
   * A build's own token, set when it starts: the marker is set only if it is still there, so a
   * Redis emptied during the build is never marked built.
   */
  indexBuilding: `${KEY_PREFIX}index:building`,
  /** String, with a TTL: a signed grant's id, claimed by the first sidecar it reached. */
  grantUsed: (jti: string) => `${KEY_PREFIX}grant:used:${jti}`,
  /** Audit events the audit store refused, waiting for any gateway replica to write them. */
  auditBacklog: `${KEY_PREFIX}audit:backlog`,
  /** Which gateway replica drains the backlog now (it expires). */
  auditBacklogLock: `${KEY_PREFIX}audit:backlog:lock`,
  /** Refusals sidecars saw, for the gateways to put in the owners' trails (sidecars append only). */
  auditSidecar: `${KEY_PREFIX}audit:sidecar`,
  /** When a user was offboarded (ms): tokens issued before then are refused. Key: sha256(subject). */
  offboarded: (subjectDigest: string) => `${KEY_PREFIX}offboarded:${subjectDigest}`,
} as const;

export const redisChannels = {
  /**
   * Message: the `keyChangeTag` of a key whose entry changed or was deleted. Not `events:keys`,
   * which carried the hash: a reader of that version (a sidecar in a pod not restarted since an
   * upgrade) cannot subscribe here (the ACL names only this channel), so it caches nothing and
   * asks Redis on every call, instead of keeping a revoked key's grant for want of a hash.
   */
  keys: `${KEY_PREFIX}events:key-changes`,
  /**
   * Message: the `routeChangeTag` of a route that changed or was deleted. Not `events:routes`,
   * which carried the route's Redis key: a sidecar's Redis user (whose password a tenant reads)
   * may subscribe, and every rebuild would have listed every workflow, service and model to it.
   * A reader of that version cannot subscribe here (the sidecar's ACL names only this channel),
   * so it caches no route.
   */
  routes: `${KEY_PREFIX}events:route-changes`,
  /** Message: JSON WakeRequest, a call waiting at a gateway for a model version at zero. */
  modelWake: `${KEY_PREFIX}events:model-wake`,
} as const;

/**
 * What the keys channel says of a changed key: a digest of its hash, not the hash. A sidecar's
 * Redis user, whose password a tenant can read, may subscribe; a hash would name the key's entry
 * (`GET tg:key:<hash>`: its owner, roles and id, and the id names its rate-limit and usage
 * counters), so every key's change would hand the tenant another team's key to exhaust. A reader
 * that holds the hash (it cached the entry) matches the tag; no one else learns anything from it.
 */
export const keyChangeTag = (hash: string): string =>
  createHash('sha256').update(`tollgate key change\n${hash}`).digest('base64url');

/**
 * What the routes channel says of a changed route: a digest of its Redis key. A reader that cached
 * the route matches it; a listener learns of no route it could not already name.
 */
export const routeChangeTag = (redisKey: string): string =>
  createHash('sha256').update(`tollgate route change\n${redisKey}`).digest('base64url');
