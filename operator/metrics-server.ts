import { createServer, type Server } from 'node:http';
import type { Runnable } from './framework/runnable.js';
import type { OperatorMetrics } from './metrics.js';

/** `/metrics`, `/healthz` and `/readyz` on every replica, leader or not. */
export class MetricsServer implements Runnable {
  readonly name = 'metrics';
  readonly needsLeader = false;
  private server: Server | undefined;

  constructor(
    private readonly port: number,
    private readonly metrics: OperatorMetrics,
  ) {}

  async start(): Promise<void> {
    const { registry } = this.metrics;
    const server = createServer((req, res) => {
      if (req.url === '/metrics') {
        void registry
          .metrics()
          .then((text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text));
      } else if (req.url === '/healthz' || req.url === '/readyz') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      } else {
        res.writeHead(404).end();
      }
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, () => resolve());
    });
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
