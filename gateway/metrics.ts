import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Route kinds as counted: the two `/events` areas, V2, and everything served by Express. */
export type MetricsRouteKind = 'bda' | 'platform' | 'v2' | 'management' | 'none';

/**
 * The gateway's Prometheus metrics. Request and failure counts are plain numbers in maps on the
 * request path (prom-client hashes its label object on every increment) and are handed to the
 * registry when it is scraped; histogram children are cached per kind.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'kind' | 'status' | 'module'>;
  private readonly authFailures: Counter<'code'>;
  private readonly upstreamSeconds: Histogram<'kind'>;
  private readonly requestTimeouts: Counter<'phase'>;
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
    this.upstreamSeconds = new Histogram({
      name: 'tollgate_gateway_upstream_duration_seconds',
      help: 'Time from sending a request upstream to the end of its response, by route kind',
      labelNames: ['kind'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [this.registry],
    });
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
