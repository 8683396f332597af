import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One delivery as the receiver saw it: verified with the endpoint's secret, or refused. */
export interface Received {
  id: string;
  verified: boolean;
  type?: string;
  data?: Record<string, unknown>;
  /** The whole verified body (a batch of usage CloudEvents is an array). */
  payload?: unknown;
  contentType?: string;
  raw: string;
}

/**
 * A webhook receiver as an endpoint's owner runs one: it verifies every delivery's signature with
 * the Standard Webhooks reference library (not Tollgate's code) and answers 204, or 401 when the
 * signature does not hold. `failNext` makes it answer 503 to the next deliveries (a receiver
 * down for a while); `stop` and `start` close and reopen its port (one that refuses connections).
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  secret = '';
  failNext = 0;
  private server: Server | undefined;
  port = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        if (this.failNext > 0) {
          this.failNext--;
          res.writeHead(503).end();
          return;
        }
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v ?? '')]),
        );
        try {
          const payload = new Webhook(this.secret).verify(raw, headers) as {
            type: string;
            data: Record<string, unknown>;
          };
          this.received.push({
            id: headers['webhook-id'] ?? '',
            verified: true,
            type: payload.type,
            data: payload.data,
            payload,
            contentType: headers['content-type'] ?? '',
            raw,
          });
          res.writeHead(204).end();
        } catch {
          this.received.push({ id: headers['webhook-id'] ?? '', verified: false, raw });
          res.writeHead(401).end();
        }
      });
    });
    await new Promise<void>((r) => this.server?.listen(this.port, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`;
  }

  /** The verified deliveries of one type. */
  of(type: string): Received[] {
    return this.received.filter((r) => r.verified && r.type === type);
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}
