import { Pool, type Dispatcher } from 'undici';
import { answerPastDeadline, interimPastDeadline } from './upstream-errors.js';
import { UpstreamSpan } from '../tracing/upstream-span.js';
import { withNotSampled } from '../tracing/trace-context.js';

const SWEEP_MS = 60_000;

/**
 * One keep-alive undici Pool per upstream origin, created on first use and shared by every
 * request to it.
 */
export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();
  /** When each pool was last asked for: a caller may hold one between tries (proxy/forward.ts). */
  private readonly used = new Map<string, number>();
  /**
   * Pools with nothing open nor waiting are let go this often: origins come and go (a replica
   * started from zero is called at its pod's address), and a pool is cheap to make again.
   */
  private readonly sweep = setInterval(() => this.dropIdle(), SWEEP_MS).unref();

  constructor(
    private readonly opts: {
      connections: number;
      connectTimeoutMs: number;
      upstreamTimeoutMs: number;
      /** Tracing is on: a request no sampled call makes says "not sampled" (tracing/trace-context.ts). */
      tracing?: boolean;
    },
  ) {}

  get(origin: string): Pool {
    this.used.set(origin, Date.now());
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, {
        connections: this.opts.connections,
        connect: { timeout: this.opts.connectTimeoutMs },
        headersTimeout: this.opts.upstreamTimeoutMs,
        bodyTimeout: this.opts.upstreamTimeoutMs,
        // Below the 5 s after which the usual upstreams (MLServer's uvicorn, Node, Gunicorn's
        // default) close an idle connection: one reused just as its server closes it fails the
        // request on it, and only some requests may be sent again (send-again.ts).
        keepAliveTimeout: 4_000,
        // Not longer however long the upstream's Keep-Alive header asks (undici would take up to 10 min).
        keepAliveMaxTimeout: 10_000,
        // One request per connection at a time: pipelining would tie a slow response to others.
        pipelining: 1,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /**
   * A request whose answer, once an interim (1xx) answer came, must begin within the upstream
   * timeout: undici restarts its head timer on each, so an upstream (a model's runtime runs its
   * team's code) sending them could hold the call for as long as it likes. A proxied call checks
   * its 1xx itself (forward.ts).
   */
  async request(origin: string, opts: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
    const deadline = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const onInfo = (): void => {
      timer ??= setTimeout(() => deadline.abort(interimPastDeadline()), this.opts.upstreamTimeoutMs);
    };
    // The whole answer, body and all: undici's body timer is the longest pause between two chunks,
    // so a runtime trickling a byte at a time would hold the call (a shadow copy's turn, a gRPC
    // call's) for as long as it likes. Past it, an answer already passed on is cut off; but not
    // while what the runtime sent waits for a slow client to take it (the runtime is not late then).
    let whole: NodeJS.Timeout | undefined;
    let body: Dispatcher.ResponseData['body'] | undefined;
    const late = (): void => {
      if (body !== undefined && body.readableLength > 0)
        whole = setTimeout(late, this.opts.upstreamTimeoutMs).unref();
      else deadline.abort(answerPastDeadline());
    };
    whole = setTimeout(late, 2 * this.opts.upstreamTimeoutMs).unref();
    const span = UpstreamSpan.start(opts.method, origin, opts.path);
    const headers = !Array.isArray(opts.headers)
      ? opts.headers
      : span !== undefined
        ? span.headers(opts.headers)
        : this.opts.tracing === true
          ? withNotSampled(opts.headers)
          : opts.headers;
    try {
      const answer = await this.get(origin).request({ ...opts, headers, signal: deadline.signal, onInfo });
      body = answer.body;
      span?.answered(answer.statusCode);
      answer.body.once('close', () => {
        clearTimeout(whole);
        span?.end();
      });
      return answer;
    } catch (err) {
      clearTimeout(whole);
      const code = (err as { code?: unknown } | null)?.code;
      span?.end(typeof code === 'string' ? code : 'error');
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes and forgets the pools that hold no connection and no request, and were not asked for lately. */
  dropIdle(idleForMs = SWEEP_MS): void {
    const before = Date.now() - idleForMs;
    for (const [origin, pool] of this.pools) {
      const { connected, pending, running } = pool.stats;
      if (connected + pending + running > 0 || (this.used.get(origin) ?? 0) > before) continue;
      this.pools.delete(origin);
      this.used.delete(origin);
      void pool.close().catch(() => undefined);
    }
  }

  /** Lets in-flight requests finish, then closes every connection. */
  async close(): Promise<void> {
    clearInterval(this.sweep);
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}
