import { interceptors, Pool, type Dispatcher } from 'undici';

/**
 * One keep-alive undici Pool per upstream origin, created on first use and shared by every
 * request to it.
 */
export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();
  private readonly retrying = new Map<string, Dispatcher>();

  constructor(
    private readonly opts: { connections: number; connectTimeoutMs: number; upstreamTimeoutMs: number },
  ) {}

  get(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, {
        connections: this.opts.connections,
        connect: { timeout: this.opts.connectTimeoutMs },
        headersTimeout: this.opts.upstreamTimeoutMs,
        bodyTimeout: this.opts.upstreamTimeoutMs,
        keepAliveTimeout: 10_000,
        // One request per connection at a time: pipelining would tie a slow response to others.
        pipelining: 1,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /**
   * The same pool for the gateway's own idempotent GETs to a runtime (readiness, metadata): sent
   * once more, on a new connection, when a kept-alive one was closed by the other side just as it
   * was reused (a race every keep-alive client has), so that race never reads as "not ready" or
   * "unreachable". Proxied calls do not go through it: the caller's request is sent once (V2
   * inference retries by hand, see gateway/v2/handler.ts).
   */
  idempotent(origin: string): Dispatcher {
    let dispatcher = this.retrying.get(origin);
    if (dispatcher === undefined) {
      dispatcher = this.get(origin).compose(
        interceptors.retry({
          maxRetries: 1,
          methods: ['GET'],
          errorCodes: ['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE'],
          // Answers are the caller's to judge: no retry on a status.
          statusCodes: [],
          minTimeout: 0,
        }),
      );
      this.retrying.set(origin, dispatcher);
    }
    return dispatcher;
  }

  /** Lets in-flight requests finish, then closes every connection. */
  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
    this.retrying.clear();
  }
}
