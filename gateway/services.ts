import { connectRedis } from '../common/redis/connect.js';
import type { Redis } from 'ioredis';
import { type RedisOptions } from 'ioredis';
import { RoleCatalogue } from '../common/apikey/roles.js';
import { Admission } from './admission/admission.js';
import { CallShares } from './admission/call-shares.js';
import type { ShareRefused } from './admission/shares.js';
import { Inference } from './v2/inference.js';
import type { Logger } from '../common/logger.js';
import type { Management } from './api/management.js';
import { AuditLog } from './audit/audit-log.js';
import type { LimitNotice } from './auth/limit-notices.js';
import { CreditCosts } from './auth/credit-costs.js';
import { noticeEvent, noticeOnce } from './webhooks/events.js';
import { WebhookInbox } from './webhooks/inbox.js';
import { openSegmentStore } from './segments/open-segment-store.js';
import { VersionFigureRecorder } from './v2/version-figures.js';
import { PayloadLog } from './v2/payload-log/payload-log.js';
import { MetadataCache } from './v2/metadata-cache.js';
import { ModelUsageRecorder } from './v2/model-usage.js';
import { LoadReporter } from './v2/load-reporter.js';
import { Activator } from './v2/activator.js';
import { redisKeys } from '../common/redis/schema.js';
import { KeyChecker } from './auth/key-check.js';
import type { RefusalSink } from './auth/refusals.js';
import { GrantSigner } from './auth/signed-grant.js';
import { RateLimiter } from './auth/rate-limit.js';
import { RedisClock } from './auth/redis-clock.js';
import { UsageRecorder } from './auth/usage.js';
import { UsageMeter } from './usage-export/meter.js';
import { MinuteCloser } from './usage-export/closer.js';
import type { GatewayConfig } from './config.js';
import { CacheInvalidation } from './invalidation.js';
import { GatewayMetrics } from './metrics.js';
import { UpstreamPools } from './proxy/upstream-pools.js';
import { EventsRouter, type PlatformResourceHandler } from './routing/events-router.js';
import { RouteTable } from './routing/route-table.js';
import { loadEntryTrust, type EntryTrust } from './auth/entry-trust.js';
import { CidrAllowlist } from '../common/net/cidr.js';
import type { ProxyTrust } from './http/client-address.js';
import { HeldMemory } from './http/held-memory.js';
import { Background } from './background.js';
import { startTracing, type Tracing } from '../common/tracing/provider.js';
import { placementOf, type Placement } from './placement.js';

/** How often a central gateway looks for minutes of usage to close for export. */
const CLOSE_EVERY_MS = 5_000;

/**
 * Everything the gateway's handlers use, built once at start and injected: nothing on the
 * request path constructs a client, reads configuration or opens a connection.
 */
export interface GatewayServices {
  config: GatewayConfig;
  /** Central or sidecar, read once from the settings (placement.ts). */
  placement: Placement;
  log: Logger;
  /** Commands (key index, routes, rate limits, usage). */
  redis: Redis;
  /** Pub/sub only: cache invalidation. */
  invalidation: CacheInvalidation;
  metrics: GatewayMetrics;
  roles: RoleCatalogue;
  keys: KeyChecker;
  audit: AuditLog;
  /** Refusals of calls whose key exists: audited and counted (gateway/auth/refusals.ts). */
  refused: RefusalSink;
  rateLimiter: RateLimiter;
  /** Who may call what, at what price: the one decision every entry asks (admission/admission.ts). */
  admission: Admission;
  /** The calls in flight each client address and key owner holds on this replica. */
  calls: CallShares;
  usage: UsageRecorder;
  /**
   * Usage for export, per key, identity, target and minute (usage-export/); undefined in a sidecar
   * (a team reads its Redis password, and must not bill another team) or with usageExport off.
   */
  meter: UsageMeter | undefined;
  /** V2 inference, for every entry that serves it (one per process). */
  readonly inference: Inference;
  /** Each model's calls, errors and latency per minute, for the panel's Models page. */
  modelUsage: ModelUsageRecorder;
  /** Calls in flight per model version, reported for the operator's autoscaler. */
  load: LoadReporter;
  /** Holds calls to a model version scaled to zero until a replica is ready. */
  activator: Activator;
  routes: RouteTable;
  events: EventsRouter;
  management: Management | undefined;
  upstreams: UpstreamPools;
  /** Signs grants for the sidecars of workflow services, when configured. */
  grantSigner: GrantSigner | undefined;
  /** Which proxies in front are believed about the client (its address, how it came in). */
  proxies: ProxyTrust;
  /** Which Redis entries are believed (sealed by the operator), and the sealer of a central gateway. */
  trust: EntryTrust;
  /** Models' V2 metadata, shared by /v2 and the workflow route to the same models. */
  metadata: MetadataCache;
  /** What calls hold in memory (V2 bodies, gRPC messages and unread answers), per owner and in all. */
  heldMemory: HeldMemory;
  /**
   * Where models that set spec.logging log their calls; undefined where this gateway keeps none
   * (no payloadLogUri, or a sidecar: it holds no storage credentials, and calls from outside the
   * pod reach it through a central gateway, which logs them).
   */
  payloadLog: PayloadLog | undefined;
  /**
   * Each version's calls, failures and latency for the operator's canary analysis; undefined in a
   * sidecar, which also sends no shadow copies and falls back on no default (it serves one version).
   */
  versionFigures: VersionFigureRecorder | undefined;
  /** OpenTelemetry's tracer, when traces are asked for (config.tracing); undefined, no span is made. */
  tracing: Tracing | undefined;
  /** Set once shutdown begins: /readyz fails, so the replica leaves its Service's endpoints. */
  draining: boolean;
  /** Ends background work and closes connections; the HTTP server must be closed first. */
  close(): Promise<void>;
}

/** What the extras are built from: the services' own role catalogue, audit trail and trust. */
export interface SharedServices {
  roles: RoleCatalogue;
  audit: AuditLog;
  trust: EntryTrust;
  /** Which proxies in front are believed about the client. */
  proxies: ProxyTrust;
  /** Counts a refusal past a team's share (the management API's webhook sends and leak reports). */
  shareRefused: ShareRefused;
}

export interface ServiceExtras {
  /** Platform resources served inside the gateway rather than proxied (the `models` seam). */
  platformResources?: (shared: SharedServices) => ReadonlyMap<string, PlatformResourceHandler>;
  /**
   * Builds the management API (and, standalone, the local issuer's JWKS), mounted by the Express
   * app; given the services' role catalogue so both check roles against the same one.
   */
  management?: (shared: SharedServices) => Promise<Management | undefined>;
}

function redisOptions(): RedisOptions {
  return {
    // Fail closed and fast: a command issued while Redis is away is refused at once (503), never
    // queued to pass later, and a hung server cannot hold a request longer than a second.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 1_000,
    connectTimeout: 2_000,
    // Tried again within a quarter second at most: after a Sentinel failover the new primary is
    // found on the next attempt, so the wait between attempts is most of what a caller sees.
    retryStrategy: (attempt) => Math.min(attempt * 50, 250),
    lazyConnect: false,
  };
}

export async function createGatewayServices(
  config: GatewayConfig,
  log: Logger,
  extras: ServiceExtras = {},
): Promise<GatewayServices> {
  const redis = connectRedis(config.redisUrl, { ...redisOptions(), connectionName: 'tollgate-gateway' });
  // The subscriber must queue its SUBSCRIBE until connected, and never time out while waiting.
  const subscriber = connectRedis(config.redisUrl, {
    ...redisOptions(),
    enableOfflineQueue: true,
    commandTimeout: undefined,
    autoResubscribe: false,
    connectionName: 'tollgate-gateway-sub',
  });
  redis.on('error', (err: Error) => log.warn({ err: err.message }, 'redis error'));
  const placement = placementOf(config);
  const central = placement === 'central';
  const background = new Background(log);
  // Added first, so stopped last: the spans of the last calls, and of the stop, are sent.
  const tracing = await startTracing(config.tracing, central ? 'tollgate-gateway' : 'tollgate-sidecar', log);
  if (tracing !== undefined) background.add('tracing', { stop: () => tracing.shutdown() });
  background.add('redis', {
    // Start answering even if Redis is away (every checked call then gets 503), but give it a
    // moment so a normal start does not begin with a burst of refusals.
    start: () => waitReady(redis, 3_000),
    async stop() {
      await Promise.allSettled([redis.quit(), subscriber.quit()]);
      redis.disconnect();
      subscriber.disconnect();
    },
  });

  const invalidation = background.add(
    'invalidation',
    new CacheInvalidation(subscriber, log, config.redisHeartbeatMs),
  );
  invalidation.watchIndex(() =>
    redis.get(redisKeys.indexMarker).catch((err: unknown) => {
      // A primary cut off by the network never closes the socket, so the connection would stay
      // "ready" and every command would time out until TCP gave up (minutes): a timed-out probe
      // reconnects it, which (with Sentinel) asks for the current primary.
      if (err instanceof Error && err.message === 'Command timed out') redis.disconnect(true);
      throw err;
    }),
  );
  const trust = await loadEntryTrust(config);
  const proxies: ProxyTrust = {
    hops: config.trustedProxies,
    proxies: new CidrAllowlist(config.trustedProxyCidrs),
  };
  const metrics = new GatewayMetrics();
  metrics.trackCacheLive(() => invalidation.live);
  const roles = new RoleCatalogue({ resources: Object.keys(config.upstreams), roles: config.roles });
  const audit = background.add(
    'audit',
    new AuditLog(
      config.auditUri === undefined ? undefined : await openSegmentStore(config.auditUri, process.env),
      log.child({ component: 'audit' }),
      {
        flushMs: config.auditFlushMs,
        retentionDays: config.auditRetentionDays,
        proxies,
        refusalIntervalMs: config.auditRefusalIntervalMs,
        // A sidecar (it trusts the operator's keys and holds none) keeps no trail: it reports to
        // the central gateways (those that hold the key), which take the reports into the trail
        // or, keeping none, only hold the queue to its bound.
        ...(central
          ? { sidecarReports: config.auditUri !== undefined ? ('collect' as const) : ('bound' as const) }
          : config.trustedKeys !== undefined
            ? { sidecarReports: 'send' as const }
            : {}),
      },
      // `keys` is built below; reports are read at a flush, long after.
      { redis, grantOf: (hash) => keys.grantOf(hash) },
    ),
  );
  const usage = background.add(
    'usage',
    new UsageRecorder(redis, log, config.usageFlushMs, config.usageSeries),
  );
  const modelUsage = background.add('model usage', new ModelUsageRecorder(redis, log, config.usageFlushMs));
  const load = background.add('load reports', new LoadReporter(redis, log, trust.reports));
  const activator = new Activator(redis, log, config.maxActivationWaitSeconds * 1000);
  background.add('activator', { stop: () => activator.close() });
  const exported = central && config.usageExport;
  const retentionMs = config.usageExportRetentionDays * 86_400_000;
  const meter = exported
    ? background.add(
        'usage export',
        new UsageMeter(
          redis,
          log.child({ component: 'usage-export' }),
          config.usageFlushMs,
          retentionMs / 1000,
        ),
      )
    : undefined;
  if (exported)
    background.add(
      'usage minutes',
      new MinuteCloser(redis, log.child({ component: 'usage-export' }), {
        everyMs: CLOSE_EVERY_MS,
        // Every replica's flush of a minute is in by then (two flushes, and a margin for clocks).
        graceMs: 2 * config.usageFlushMs + 5_000,
        retentionMs,
      }),
    );
  const refused: RefusalSink = (grant, code, req, metered) => {
    audit.refused(grant, code, req);
    usage.refused(grant.id);
    meter?.refused(grant, code, metered);
  };
  const keys = new KeyChecker(
    redis,
    trust.verifier,
    invalidation,
    log,
    config.cacheEntries,
    proxies,
    refused,
  );
  const routes = new RouteTable(redis, trust.verifier, invalidation, log, config.cacheEntries);
  const shareRefused: ShareRefused = (share, team) => metrics.shareRefused(share, team);
  const shared: SharedServices = { roles, audit, trust, proxies, shareRefused };
  const creditCosts = new CreditCosts(config.creditCosts);
  const upstreams = new UpstreamPools({
    connections: config.upstreamConnections,
    connectTimeoutMs: config.connectTimeoutMs,
    upstreamTimeoutMs: config.upstreamTimeoutMs,
    tracing: tracing !== undefined,
  });
  background.add('upstream pools', { stop: () => upstreams.close() });
  // On a cluster the key is the operator's Secret, mounted; standalone, a file made on first use.
  // The operator publishes its public half for the sidecars (common/redis/grant-keys.ts).
  const grantSigner =
    config.grantSigningKeyFile === undefined ? undefined : await GrantSigner.open(config.grantSigningKeyFile);
  const metadata = new MetadataCache(upstreams, grantSigner, invalidation, log, config.cacheEntries);
  const management = await extras.management?.(shared);
  const payloadLog =
    config.payloadLogUri === undefined || !central
      ? undefined
      : background.add(
          'payload log',
          new PayloadLog(
            await openSegmentStore(config.payloadLogUri, process.env),
            { intervalMs: config.payloadLogIntervalMs, bufferBytes: config.payloadLogBufferBytes },
            metrics.registry,
            log.child({ component: 'payload-log' }),
            shareRefused,
          ),
        );
  // A central gateway only: a sidecar's Redis user may not write the figures a rollout is judged on.
  const versionFigures = central
    ? background.add('version figures', new VersionFigureRecorder(redis, log))
    : undefined;
  const inbox = new WebhookInbox(redis, (err) => log.warn({ err }, 'webhook event not queued'));
  // Only a central gateway (it holds the signing key) counts credits: a sidecar's Redis user may
  // not write them, so a team that reads its password cannot give any key more.
  // The limits' windows by Redis's clock from the first call on (started once Redis is up).
  const clock = background.add('redis clock', new RedisClock(redis, log));
  const rateLimiter = new RateLimiter(redis, {
    clock,
    countsCredits: central,
    leases: central,
    // A central gateway tells the webhooks of breaches and low credits through Redis (a sidecar's
    // user may not write there): whichever replica serves the management API sends them.
    ...(central ? { notices: (n: LimitNotice) => inbox.push(noticeEvent(n), noticeOnce(n)) } : {}),
  });
  background.add('rate limiter', { stop: () => rateLimiter.close() });
  // The one admission decision every entry asks (admission/admission.ts), built once.
  const calls = new CallShares(
    { perAddress: config.callsPerAddress, perOwner: config.callsPerOwner },
    shareRefused,
  );
  const admission = new Admission({ roles, rateLimiter, creditCosts, usage, meter, calls });
  const events = new EventsRouter(
    routes,
    admission,
    config.upstreams,
    extras.platformResources?.(shared) ?? new Map(),
  );
  // Added last, so stopped first: no management call begins while the rest stop.
  if (management !== undefined) background.add('management API', { stop: () => management.close() });
  await background.start();

  // One inference service per process, for /v2, /events and gRPC alike: its shadow-copy budget
  // (shadow-traffic.ts) is the replica's, not each entry's. Made on first use: it is built on these
  // services.
  let inference: Inference | undefined;
  const services: GatewayServices = {
    config,
    placement,
    log,
    redis,
    invalidation,
    metrics,
    roles,
    keys,
    audit,
    refused,
    admission,
    calls,
    rateLimiter,
    usage,
    meter,
    modelUsage,
    load,
    activator,
    routes,
    events,
    management,
    upstreams,
    proxies,
    metadata,
    heldMemory: new HeldMemory(config.heldBytesLimit ?? 16 * config.bodyLimitBytes, config.bodyLimitBytes),
    payloadLog,
    versionFigures,
    grantSigner,
    trust,
    tracing,
    draining: false,
    get inference() {
      return (inference ??= new Inference(services));
    },
    close: () => background.stop(),
  };
  return services;
}

function waitReady(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    redis.once('ready', done);
  });
}
