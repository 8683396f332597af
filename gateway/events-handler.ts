import type { IncomingMessage, ServerResponse } from 'node:http';
import { enterCall } from './http/call-slot.js';
import { performance } from 'node:perf_hooks';
import type { KeyGrant } from '../common/resources/grant.js';
import type { Authenticate } from './auth/authenticate.js';
import { sendError } from './http/errors.js';
import type { MetricsRouteKind } from './metrics.js';
import { requestIdOf, upstreamRequestHeaders } from './proxy/headers.js';
import { withSignedGrant } from './auth/signed-grant.js';
import { forward } from './proxy/forward.js';
import type { EventsTarget } from './routing/events-router.js';
import type { NormalisedPath } from './routing/normalise.js';
import { fieldedBody, refuseMethodOverride, refuseOverrideInBody } from './routing/method-override.js';
import { carriesBody, readBody } from './http/read-body.js';
import type { HeldKind } from './http/held-memory.js';
import { noteRefusal } from './auth/refusals.js';
import type { GatewayServices } from './services.js';
import type { Inference } from './v2/inference.js';
import { restAnswer } from './v2/answer-sink.js';
import { restBody } from './v2/infer-body.js';
import { usageEndpoint } from './routing/usage-endpoint.js';

/**
 * The hot path for `/events/...`: key check, routing and admission, limits and usage, proxy. No Express and
 * no per-request construction of clients. The key and route lookups answer synchronously when
 * their caches hold the entry, so a cached call runs straight through to the upstream request
 * without waiting on a promise; only a Redis round trip or the upstream itself is awaited.
 *
 * The routing decision is the placement's: the central gateway resolves `/events/...` through its
 * route table; a sidecar resolves every path to the one workload it protects (gateway/sidecar/).
 * Everything else (the key check, rate limit, usage, proxy, errors, metrics) is this one code.
 */
export type ResolveTarget = (
  method: string,
  path: NormalisedPath,
  grant: KeyGrant,
) => Promise<EventsTarget> | EventsTarget;

export type CallHandler = (req: IncomingMessage, res: ServerResponse, path: NormalisedPath) => void;

export function createEventsHandler(
  s: GatewayServices,
  resolve: ResolveTarget = (method, path, grant) => s.events.resolve(method, path, grant),
  authenticate: Authenticate = (req) => s.keys.check(req),
): CallHandler {
  const inference = s.inference;
  return (req, res, path) => new EventsCall(s, resolve, authenticate, inference, req, res, path).start();
}

/** One `/events` call, step by step; each step continues synchronously or when its promise settles. */
class EventsCall {
  private readonly requestId: string;
  private readonly kind: MetricsRouteKind;
  private module = 'none';
  private grant: KeyGrant | undefined;

  constructor(
    private readonly s: GatewayServices,
    private readonly resolve: ResolveTarget,
    private readonly authenticate: Authenticate,
    private readonly inference: Inference,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly path: NormalisedPath,
  ) {
    this.requestId = requestIdOf(req);
    // A sidecar's calls have no /events prefix: every one of them is its workflow's (bda).
    const area = path.segments[0] === 'events' ? path.segments[1] : 'bda';
    this.kind = area === 'bda' || area === 'platform' ? area : 'none';
  }

  start(): void {
    let grant: KeyGrant | Promise<KeyGrant>;
    try {
      grant = this.authenticate(this.req);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (grant instanceof Promise)
      grant.then(
        (g) => this.authenticated(g),
        (err: unknown) => this.fail(err),
      );
    else this.authenticated(grant);
  }

  private authenticated(grant: KeyGrant): void {
    this.module = grant.module;
    this.grant = grant;
    let target: EventsTarget | Promise<EventsTarget>;
    try {
      if (this.kind === 'platform') refuseMethodOverride(this.req.headers, this.path.query);
      target = this.resolve(this.req.method ?? 'GET', this.path, grant);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (target instanceof Promise)
      target.then(
        (t) => this.routed(grant, t),
        (err: unknown) => this.fail(err),
      );
    else this.routed(grant, target);
  }

  /** Limits, credits and usage, as the admission core counts them; then the call is sent. */
  private routed(grant: KeyGrant, target: EventsTarget): void {
    let spent: Promise<void> | undefined;
    try {
      // Its owner's slot is held from here to the answer: an upstream that never answers holds
      // that owner's share, not the replica.
      enterCall(this.s.admission, grant, this.req, this.res);
      // Priced per row: spent by the inference once its batch is checked.
      if (!('inference' in target && target.inference.perRow !== undefined))
        spent = this.s.admission.spend(
          grant,
          target.cost ?? 1,
          usageEndpoint(this.req.method ?? 'GET', this.path),
          target.metered,
        );
    } catch (err) {
      this.fail(err);
      return;
    }
    if (spent === undefined) this.send(grant, target);
    else
      spent.then(
        () => this.send(grant, target),
        (err: unknown) => this.fail(err),
      );
  }

  /**
   * Runs from a promise's callback, where a throw would be a rejection no one handles (the process
   * ends): whatever it throws is answered.
   */
  private send(grant: KeyGrant, target: EventsTarget): void {
    // Answered meanwhile (a 408: the body held back while the key was checked): nothing to send.
    if (this.res.headersSent || this.res.writableEnded) return;
    try {
      this.sendChecked(grant, target);
    } catch (err) {
      this.fail(err);
    }
  }

  private sendChecked(grant: KeyGrant, target: EventsTarget): void {
    const { s, req, res, requestId } = this;
    if ('builtIn' in target) {
      res.setHeader('x-request-id', requestId);
      Promise.resolve()
        .then(() =>
          target.builtIn(req, res, { grant, requestId, resource: target.resource, path: this.path }),
        )
        .then(
          () => s.metrics.request(this.kind, res.statusCode, this.module),
          (err: unknown) => this.fail(err),
        );
      return;
    }
    const started = performance.now();
    let answered: Promise<number>;
    if ('inference' in target) {
      // A model published as a workflow service gets the V2 request checks before it is sent on.
      res.setHeader('x-request-id', requestId);
      const { model, workflow, routed, perRow } = target.inference;
      answered = this.inference.workflow(
        { head: req, model, workflow, routed, grant, requestId, query: this.path.query, perRow },
        restBody(req),
        restAnswer(res, s.heldMemory, grant.owner),
      );
    } else {
      answered = this.forward(target, grant);
    }
    answered.then(
      (status) => {
        s.metrics.upstreamDuration(this.kind, (performance.now() - started) / 1000);
        s.metrics.request(this.kind, status, this.module);
      },
      (err: unknown) => this.fail(err),
    );
  }

  private forward(target: Extract<EventsTarget, { proxy: unknown }>, grant: KeyGrant): Promise<number> {
    const { s, req, res, requestId } = this;
    const headers = upstreamRequestHeaders(req, grant, requestId, s.proxies);
    const pool = s.upstreams.get(target.proxy.origin);
    // Judged by the headers the upstream gets: a `Connection` header may have dropped some.
    const fielded =
      this.kind === 'platform' && carriesBody(req)
        ? fieldedBody(
            req.method ?? 'GET',
            valuesOf(headers, 'content-type'),
            valuesOf(headers, 'content-encoding'),
          )
        : [];
    if (fielded.length > 0) {
      // Frameworks that honour a `_method` field read it from the body: the whole body is read,
      // within the caller's share of held memory, checked, and then sent.
      const held = s.heldMemory.hold(grant.owner, HELD_FIELDED_BODY);
      return readBody(req, s.config.bodyLimitBytes, (bytes) => held.take(bytes))
        .then((body) => {
          refuseOverrideInBody(fielded, body);
          return forward(
            req,
            res,
            pool,
            target.proxy.origin,
            target.proxy.path,
            headers,
            requestId,
            s.config,
            body,
          );
        })
        .finally(() => held.release());
    }
    const send = (h: string[]) =>
      forward(req, res, pool, target.proxy.origin, target.proxy.path, h, requestId, s.config);
    // Only a service behind a sidecar pays for a signature (it then need not ask Redis again).
    if (target.grantAudience === undefined) return send(headers);
    return withSignedGrant(s.grantSigner, headers, grant, target.grantAudience, {
      method: req.method ?? 'GET',
      target: target.proxy.path,
    }).then(send);
  }

  private fail(thrown: unknown): void {
    const { s, res } = this;
    if (!res.headersSent) res.setHeader('x-request-id', this.requestId);
    const err = sendError(res, thrown, s.log);
    if (err.status === 401) s.metrics.authFailure(err.code);
    if (this.grant !== undefined) noteRefusal(s.refused, this.grant, err, this.req);
    s.metrics.request(this.kind, err.status, this.module);
  }
}

const HELD_FIELDED_BODY: HeldKind = {
  advice: 'send fewer platform calls with form or JSON bodies at once, or smaller ones',
};

/** Every value of a header in a flat [name, value, ...] list. */
function valuesOf(headers: readonly string[], name: string): string[] {
  const found: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]?.toLowerCase() === name) found.push(headers[i + 1] ?? '');
  }
  return found;
}
