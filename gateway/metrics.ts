import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Share } from './admission/shares.js';

/** Inference latencies: a sklearn model answers in about a millisecond, a large one in seconds. */
const MODEL_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** One inference call being measured (GatewayMetrics.modelCall). */
export interface ModelCall {
  /** The runtime's share of the call, in seconds. */
  runtime(seconds: number): void;
  /**
   * The call's outcome; `rejected` when the gateway's V2 checks refused it. Only the first counts.
   * Returns the call's time, in seconds.
   */
  end(status: number, code?: string, rejected?: boolean): number;
}

/** Route kinds as counted: the two `/events` areas, V2, and everything served by Express. */
export type MetricsRouteKind = 'bda' | 'platform' | 'v2' | 'forward_auth' | 'management' | 'none';

/**
 * The gateway's Prometheus metrics. Request and failure counts are plain numbers in maps on the
 * request path (prom-client hashes its label object on every increment) and are handed to the
 * registry when it is scraped; histogram children are cached per kind.
 */
/** How often, at most, idle model series are looked for; and how long unused before they go. */
const MODEL_SWEEP_MS = 10 * 60_000;
const MODEL_IDLE_MS = 60 * 60_000;

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'kind' | 'status' | 'module'>;
  private readonly authFailures: Counter<'code'>;
  private readonly upstreamSeconds: Histogram<'kind'>;
  private readonly requestTimeouts: Counter<'phase'>;
  private readonly connectionsRefused: Counter<'port' | 'reason'>;
  private readonly sharesRefused: Counter<'share' | 'team'>;
  private readonly modelRequests: Counter<'model' | 'version' | 'status' | 'code'>;
  private readonly modelRejected: Counter<'model' | 'version' | 'code'>;
  private readonly modelSeconds: Histogram<'model' | 'version'>;
  private readonly modelRuntimeSeconds: Histogram<'model' | 'version'>;
  private readonly modelInFlight: Gauge<'model' | 'version'>;
  private readonly shadowCalls: Counter<'model' | 'version' | 'outcome'>;
  private readonly shadowSeconds: Histogram<'model' | 'version'>;
  private readonly fallbacks: Counter<'model' | 'version' | 'code'>;
  private readonly modelChildren = new Map<
    string,
    {
      model: string;
      version: string;
      inFlight: { inc(): void; dec(): void };
      seconds: { observe(v: number): void };
      runtime: { observe(v: number): void };
      /** Calls in flight now, and when the last one began (epoch ms): idle series are let go. */
      active: number;
      lastCall: number;
    }
  >();
  private lastSweep = Date.now();
  private readonly requestCounts = new Map<string, number>();
  private readonly authCounts = new Map<string, number>();
  private readonly upstreamChildren = new Map<string, { observe(value: number): void }>();

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_gateway_' });
    this.requests = new Counter({
      name: 'tollgate_gateway_requests_total',
      help: 'Requests answered, by route kind, HTTP status and key module',
      labelNames: ['kind', 'status', 'module'],
      registers: [this.registry],
      collect: () => {
        this.requests.reset();
        for (const [id, count] of this.requestCounts) {
          const [kind, status, module] = id.split('|') as [string, string, string];
          this.requests.inc({ kind, status, module }, count);
        }
      },
    });
    this.authFailures = new Counter({
      name: 'tollgate_gateway_auth_failures_total',
      help: 'Requests refused for their credentials, by error code',
      labelNames: ['code'],
      registers: [this.registry],
      collect: () => {
        this.authFailures.reset();
        for (const [code, count] of this.authCounts) this.authFailures.inc({ code }, count);
      },
    });
    this.requestTimeouts = new Counter({
      name: 'tollgate_gateway_request_timeouts_total',
      help: 'Connections cut because the request head or body did not arrive in time (slow clients)',
      labelNames: ['phase'],
      registers: [this.registry],
    });
    this.connectionsRefused = new Counter({
      name: 'tollgate_gateway_connections_refused_total',
      help: 'Connections closed as they came, by reason: the port held all it keeps (full: maxConnections, grpcMaxConnections), or their address held its share (share)',
      labelNames: ['port', 'reason'],
      registers: [this.registry],
    });
    this.sharesRefused = new Counter({
      name: 'tollgate_gateway_share_refusals_total',
      help: 'Refusals because a team held its share of the replica, by share (calls_per_address, calls_per_owner, payload_log_buffer, shadow_copies, webhook_sends, leak_report_bytes) and team (the key owner or the Models\' namespace; "" for a client address\'s share)',
      labelNames: ['share', 'team'],
      registers: [this.registry],
    });
    this.modelRequests = new Counter({
      name: 'tollgate_model_requests_total',
      help: 'Inference calls to each model and version ("" for an unversioned model), by HTTP status and error code ("" on success)',
      labelNames: ['model', 'version', 'status', 'code'],
      registers: [this.registry],
    });
    this.modelRejected = new Counter({
      name: 'tollgate_model_rejected_total',
      help: 'Inference calls the gateway refused against the model’s metadata before the runtime saw them, by code',
      labelNames: ['model', 'version', 'code'],
      registers: [this.registry],
    });
    this.modelSeconds = new Histogram({
      name: 'tollgate_model_request_duration_seconds',
      help: 'Time to answer an inference call, at the gateway (its checks, the runtime and the answer)',
      labelNames: ['model', 'version'],
      buckets: MODEL_BUCKETS,
      registers: [this.registry],
    });
    this.modelRuntimeSeconds = new Histogram({
      name: 'tollgate_model_runtime_duration_seconds',
      help: 'The runtime’s share: from sending the call to the model’s runtime to its response head',
      labelNames: ['model', 'version'],
      buckets: MODEL_BUCKETS,
      registers: [this.registry],
    });
    this.modelInFlight = new Gauge({
      name: 'tollgate_model_in_flight',
      help: 'Inference calls to each model and version being answered now',
      labelNames: ['model', 'version'],
      registers: [this.registry],
    });
    this.shadowCalls = new Counter({
      name: 'tollgate_model_shadow_calls_total',
      help: 'Copies of answered calls sent to a shadow version (spec.shadow), by outcome: agreed or disagreed with the serving version, failed, or dropped (too many copies in flight)',
      labelNames: ['model', 'version', 'outcome'],
      registers: [this.registry],
    });
    this.shadowSeconds = new Histogram({
      name: 'tollgate_model_shadow_duration_seconds',
      help: 'Time a shadow version took to answer a copy (compare tollgate_model_runtime_duration_seconds of the serving version)',
      labelNames: ['model', 'version'],
      buckets: MODEL_BUCKETS,
      registers: [this.registry],
    });
    this.fallbacks = new Counter({
      name: 'tollgate_model_fallbacks_total',
      help: 'Calls a canary version failed that the default version answered instead, by the canary’s error code',
      labelNames: ['model', 'version', 'code'],
      registers: [this.registry],
    });
    this.upstreamSeconds = new Histogram({
      name: 'tollgate_gateway_upstream_duration_seconds',
      help: 'Time from sending a request upstream to the end of its response, by route kind',
      labelNames: ['kind'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [this.registry],
    });
  }

  /**
   * One inference call to a model the caller may use (so the `model` label only ever holds names of
   * models that exist): in flight until `end`, with the runtime's share of its time.
   */
  modelCall(model: string, version = ''): ModelCall {
    const started = performance.now();
    const now = Date.now();
    if (now - this.lastSweep > MODEL_SWEEP_MS) {
      this.lastSweep = now;
      // Never a rejection left unhandled: that would end the process.
      this.forgetIdleModels(now - MODEL_IDLE_MS).catch(() => undefined);
    }
    const key = `${model} ${version}`;
    let children = this.modelChildren.get(key);
    if (children === undefined) {
      // Per version, the label lookups are made once (prom-client hashes label objects on each use).
      children = {
        model,
        version,
        inFlight: this.modelInFlight.labels(model, version),
        seconds: this.modelSeconds.labels(model, version),
        runtime: this.modelRuntimeSeconds.labels(model, version),
        active: 0,
        lastCall: now,
      };
      this.modelChildren.set(key, children);
    }
    const call = children;
    const { inFlight, seconds, runtime } = call;
    call.active++;
    call.lastCall = now;
    inFlight.inc();
    let ended = false;
    return {
      runtime: (s) => runtime.observe(s),
      end: (status, code, rejected) => {
        const elapsed = (performance.now() - started) / 1000;
        if (ended) return elapsed;
        ended = true;
        call.active--;
        inFlight.dec();
        seconds.observe(elapsed);
        this.modelRequests.inc({ model, version, status: String(status), code: code ?? '' });
        if (rejected && code !== undefined) this.modelRejected.inc({ model, version, code });
        return elapsed;
      },
    };
  }

  /**
   * Lets go of the series of every model version not called since `before` (epoch ms): model and
   * version names are their teams' to choose, and each that served a call would otherwise stay in
   * every replica's memory, and in every scrape, for as long as the process lives. A version
   * called again starts its counters anew (as after a restart: rates are unchanged).
   */
  async forgetIdleModels(before: number): Promise<void> {
    const idle = [...this.modelChildren].filter(([, c]) => c.active === 0 && c.lastCall < before);
    if (idle.length === 0) return;
    const gone = new Set(idle.map(([key]) => key));
    for (const [key, { model, version }] of idle) {
      this.modelChildren.delete(key);
      for (const metric of [
        this.modelInFlight,
        this.modelSeconds,
        this.modelRuntimeSeconds,
        this.shadowSeconds,
      ])
        metric.remove(model, version);
    }
    // The counters with more labels than model and version: each of their series of those versions.
    for (const counter of [this.modelRequests, this.modelRejected, this.shadowCalls, this.fallbacks] as Array<
      Counter<string>
    >) {
      for (const { labels } of (await counter.get()).values)
        if (gone.has(`${String(labels['model'])} ${String(labels['version'])}`)) counter.remove(labels);
    }
  }

  /** One copy of a call sent to a shadow version, and its time when it answered. */
  shadowCall(
    model: string,
    version: string,
    outcome: 'agreed' | 'disagreed' | 'failed' | 'dropped',
    seconds?: number,
  ): void {
    this.shadowCalls.inc({ model, version, outcome });
    if (seconds !== undefined) this.shadowSeconds.observe({ model, version }, seconds);
  }

  /** A canary failed a call and the default version answered it. */
  fallback(model: string, version: string, code: string): void {
    this.fallbacks.inc({ model, version, code });
  }

  /** Exposes whether the in-process caches are trusted (their invalidation channel is live). */
  trackCacheLive(live: () => boolean): void {
    new Gauge({
      name: 'tollgate_gateway_cache_live',
      help: '1 while the key and route caches are in use (pub/sub invalidation live), 0 while every lookup goes to Redis',
      registers: [this.registry],
      collect() {
        this.set(live() ? 1 : 0);
      },
    });
  }

  /** A request whose head or body did not arrive within its bound (rare: prom-client directly). */
  requestTimeout(phase: 'headers' | 'body'): void {
    this.requestTimeouts.inc({ phase });
  }
  /** A connection closed as it came (see gateway/http/connection-gate.ts). */
  connectionRefused(port: 'http' | 'grpc', reason: 'full' | 'share'): void {
    this.connectionsRefused.inc({ port, reason });
  }
  /** A refusal past a team's share of the replica (gateway/admission/shares.ts). */
  shareRefused(share: Share, team: string): void {
    this.sharesRefused.inc({ share, team });
  }
  request(kind: MetricsRouteKind, status: number, module: string): void {
    const id = `${kind}|${status}|${module}`;
    this.requestCounts.set(id, (this.requestCounts.get(id) ?? 0) + 1);
  }

  authFailure(code: string): void {
    this.authCounts.set(code, (this.authCounts.get(code) ?? 0) + 1);
  }

  upstreamDuration(kind: MetricsRouteKind, seconds: number): void {
    let child = this.upstreamChildren.get(kind);
    if (child === undefined) {
      child = this.upstreamSeconds.labels(kind);
      this.upstreamChildren.set(kind, child);
    }
    child.observe(seconds);
  }
}
