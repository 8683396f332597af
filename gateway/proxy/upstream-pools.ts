import { Pool } from 'undici';

/**
 * One keep-alive undici Pool per upstream origin, created on first use and shared by every
 * request to it.
 */
export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();

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

  /** Lets in-flight requests finish, then closes every connection. */
  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}
