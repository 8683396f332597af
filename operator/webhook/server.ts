import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { V1Pod } from '@kubernetes/client-node';
import { z } from 'zod';
import type { Logger } from '../../common/logger.js';
import type { OperatorMetrics } from '../metrics.js';
import { planInjection, planUpdate, type Injection, type InjectionConfig } from './inject.js';

/**
 * The mutating admission webhook's HTTPS server (`POST /mutate-v1-pod`, the kubebuilder path).
 * Every operator replica serves it, leader or not, so injection does not stop while the Lease
 * moves. It starts once the first certificate is known and takes new ones without a restart.
 */
export const MUTATE_PATH = '/mutate-v1-pod';
/** An UPDATE's review carries the Pod twice, as JSON (larger than etcd's 1.5 MiB of protobuf). */
const MAX_REVIEW_BYTES = 4 * 1024 * 1024;
/**
 * The port takes any caller, and a review is parsed in the process that also reconciles and holds
 * the Lease: reviews in flight may hold this many bytes together (a few Pods' worth, far more than
 * the API server sends at once), and those of one caller's address one review's worth; past
 * either, a review is answered 503 unread and retried by its sender.
 */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
const MAX_BUFFERED_BYTES_PER_ADDRESS = MAX_REVIEW_BYTES;
/**
 * Connections one address may hold open. The API server speaks HTTP/1.1 to the webhook, one
 * connection per review in flight, and behind a konnectivity agent every API server calls from one
 * address: a burst of a few hundred pods must pass, while one pod's thousands of idle sockets do not.
 */
const MAX_CONNECTIONS_PER_ADDRESS = 512;
/** A review arrives whole in milliseconds; one trickled in is cut, and so is an idle connection. */
const REQUEST_TIMEOUT_MS = 10_000;
const HANDSHAKE_TIMEOUT_MS = 5_000;

class WebhookBusy extends Error {}

/** What one review holds of the budgets, and whose address it came from. */
interface Held {
  bytes: number;
  address: string;
}

const reviewSchema = z.object({
  apiVersion: z.string(),
  kind: z.literal('AdmissionReview'),
  request: z.object({
    uid: z.string(),
    namespace: z.string().optional(),
    operation: z.string().default('CREATE'),
    dryRun: z.boolean().optional(),
    object: z.looseObject({}),
    oldObject: z.looseObject({}).nullish(),
  }),
});

export class WebhookServer {
  private server: Server | undefined;
  /** Bytes the reviews in flight have sent so far, until each is answered: in all, and by address. */
  private buffered = 0;
  private readonly bufferedBy = new Map<string, number>();
  private readonly connectionsBy = new Map<string, number>();

  constructor(
    private readonly port: number,
    private readonly config: InjectionConfig,
    private readonly log: Logger,
    private readonly metrics: OperatorMetrics,
    /** Puts the sidecar's Redis credential in the pod's namespace before the pod is admitted. */
    private readonly ensureCredentials: (namespace: string) => Promise<void> = async () => undefined,
    /**
     * Why a workflow may not be served from a namespace (its Workflow record), or undefined. The
     * route is refused anyway (the Service reconciler decides); refusing the pod says so at once,
     * to whoever applies it, instead of a guarded pod that nothing will ever call.
     */
    private readonly workflowRefusal: (workflow: string, namespace: string) => string | undefined = () =>
      undefined,
    /**
     * Namespaces the webhook configuration leaves out (Tollgate's own, the system's): the API
     * server never sends their pods, so a review naming one was written by someone else (the port
     * takes any caller), and is refused before anything is made there.
     */
    private readonly excluded: ReadonlySet<string> = new Set(),
  ) {}

  /** Bytes the reviews in flight hold now (what the budgets count). */
  get inFlightBytes(): number {
    return this.buffered;
  }

  /** Starts serving with these certificates, or swaps them in for new connections. */
  async useCertificates(tls: { cert: string; key: string }): Promise<void> {
    if (this.server !== undefined) {
      this.server.setSecureContext(tls);
      this.log.info('webhook serving certificate reloaded');
      return;
    }
    const server = createServer(
      {
        ...tls,
        minVersion: 'TLSv1.2',
        handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
        requestTimeout: REQUEST_TIMEOUT_MS,
        headersTimeout: REQUEST_TIMEOUT_MS / 2,
        keepAliveTimeout: REQUEST_TIMEOUT_MS,
        // How often those timeouts are looked at (Node's default, 30 s, would let a trickle live 40 s).
        connectionsCheckingInterval: 1_000,
      },
      (req, res) => void this.handle(req, res).catch((err: unknown) => this.failed(res, err)),
    );
    server.setTimeout(REQUEST_TIMEOUT_MS, (socket) => socket.destroy());
    // Counted from the TCP connection, before any handshake: idle sockets of one address cannot
    // keep the API server's out.
    server.on('connection', (socket: Socket) => {
      const address = socket.remoteAddress ?? '';
      const open = (this.connectionsBy.get(address) ?? 0) + 1;
      if (open > MAX_CONNECTIONS_PER_ADDRESS) {
        socket.destroy();
        return;
      }
      this.connectionsBy.set(address, open);
      socket.once('close', () => {
        const left = (this.connectionsBy.get(address) ?? 1) - 1;
        if (left > 0) this.connectionsBy.set(address, left);
        else this.connectionsBy.delete(address);
      });
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.log.info({ port: this.port }, 'sidecar webhook listening');
  }

  close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return Promise.resolve();
    return new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/healthz') return void res.writeHead(200).end('ok\n');
    if (path !== MUTATE_PATH || req.method !== 'POST') return void res.writeHead(404).end();
    const held = { bytes: 0, address: req.socket.remoteAddress ?? '' };
    try {
      await this.review(req, res, held);
    } finally {
      this.buffered -= held.bytes;
      const left = (this.bufferedBy.get(held.address) ?? 0) - held.bytes;
      if (left > 0) this.bufferedBy.set(held.address, left);
      else this.bufferedBy.delete(held.address);
    }
  }

  /** Whatever a review threw: answered, never left to end the process (every replica serves it). */
  private failed(res: ServerResponse, err: unknown): void {
    this.metrics.admissions.inc({ result: 'error' });
    this.log.error({ err }, 'a sidecar review failed');
    if (res.headersSent) res.destroy();
    else
      res.writeHead(500, { 'content-type': 'text/plain' }).end('the review failed; see the operator log\n');
  }

  private async review(req: IncomingMessage, res: ServerResponse, held: Held): Promise<void> {
    let review: z.infer<typeof reviewSchema>;
    try {
      review = reviewSchema.parse(JSON.parse((await this.readLimited(req, held)).toString('utf8')));
    } catch (err) {
      this.metrics.admissions.inc({ result: 'error' });
      if (err instanceof WebhookBusy) {
        this.log.warn({ buffered: this.buffered }, 'sidecar webhook busy: a review answered 503 unread');
        res
          .writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1', connection: 'close' })
          .end(`${err.message}\n`);
        return;
      }
      res
        .writeHead(400, { 'content-type': 'text/plain' })
        .end(`not an AdmissionReview: ${(err as Error).message}\n`);
      return;
    }
    const { uid, namespace, operation, dryRun } = review.request;
    const pod = review.request.object as V1Pod;
    const name = pod.metadata?.name ?? pod.metadata?.generateName ?? '';
    const podNamespace = namespace ?? pod.metadata?.namespace ?? 'default';
    let plan: Injection;
    try {
      plan =
        operation === 'UPDATE'
          ? planUpdate(review.request.oldObject as V1Pod | undefined, pod)
          : planInjection(pod, this.config);
    } catch (err) {
      // A review is read before the API server validates the pod (containers may still be null),
      // and the port takes anyone's: a pod that cannot be read is refused, saying so.
      plan = {
        kind: 'refuse',
        reason: `the pod could not be read (${(err as Error).message}); send a valid Pod`,
      };
    }
    if (plan.kind === 'inject' && plan.workflow !== undefined && operation !== 'UPDATE') {
      const refusal = this.workflowRefusal(plan.workflow, podNamespace);
      if (refusal !== undefined) plan = { kind: 'refuse', reason: refusal };
    }
    if (this.excluded.has(podNamespace)) {
      plan = { kind: 'refuse', reason: `namespace "${podNamespace}" is not guarded by this webhook` };
    }
    if (plan.kind === 'inject' && dryRun !== true) {
      try {
        await this.ensureCredentials(podNamespace);
      } catch (err) {
        // A pod whose sidecar could not start would wait forever: refused now, and retried by its
        // controller, with what went wrong.
        plan = {
          kind: 'refuse',
          reason: `could not give the sidecar its Redis credential (${(err as Error).message}); retry`,
        };
      }
    }
    this.metrics.admissions.inc({
      result: plan.kind === 'inject' ? 'injected' : plan.kind === 'skip' ? 'skipped' : 'refused',
    });
    let response: Record<string, unknown>;
    if (plan.kind === 'inject') {
      this.log.info({ namespace, pod: name, guards: plan.guards }, 'sidecar injected');
      response = {
        uid,
        allowed: true,
        patchType: 'JSONPatch',
        patch: Buffer.from(JSON.stringify(plan.patch)).toString('base64'),
      };
    } else if (plan.kind === 'refuse') {
      this.log.warn({ namespace, pod: name, reason: plan.reason }, 'pod refused by the sidecar webhook');
      response = {
        uid,
        allowed: false,
        status: { code: 403, reason: 'Forbidden', message: `tollgate sidecar: ${plan.reason}` },
      };
    } else {
      response = { uid, allowed: true };
    }
    const body = JSON.stringify({ apiVersion: review.apiVersion, kind: 'AdmissionReview', response });
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  }

  /**
   * The review's bytes, counted in `held` (and the totals) until it is answered. Refused, the rest
   * of the body is read and dropped, so the answer reaches the caller.
   */
  private readLimited(req: IncomingMessage, held: Held): Promise<Buffer> {
    const declared = Number(req.headers['content-length'] ?? 0);
    const refusal = (extra: number): Error | undefined => {
      if (held.bytes + extra > MAX_REVIEW_BYTES) return new Error(`larger than ${MAX_REVIEW_BYTES} bytes`);
      if (
        this.buffered + extra > MAX_BUFFERED_BYTES ||
        (this.bufferedBy.get(held.address) ?? 0) + extra > MAX_BUFFERED_BYTES_PER_ADDRESS
      )
        return this.busy();
      return undefined;
    };
    return new Promise((resolve, reject) => {
      const refuse = (err: Error): void => {
        req.removeAllListeners('data');
        req.resume();
        reject(err);
      };
      const early = refusal(declared);
      if (early !== undefined) return refuse(early);
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => {
        const late = refusal(chunk.length);
        if (late !== undefined) return refuse(late);
        held.bytes += chunk.length;
        this.buffered += chunk.length;
        this.bufferedBy.set(held.address, (this.bufferedBy.get(held.address) ?? 0) + chunk.length);
        chunks.push(chunk);
      });
      req.once('end', () => resolve(Buffer.concat(chunks)));
      req.once('error', reject);
    });
  }

  private busy(): WebhookBusy {
    return new WebhookBusy(
      `the sidecar webhook holds ${MAX_BUFFERED_BYTES} bytes of reviews in flight; retry in a moment`,
    );
  }
}
