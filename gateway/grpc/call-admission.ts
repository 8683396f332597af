import { Metadata, ServerInterceptingCall, status as Status, type ServerInterceptor } from '@grpc/grpc-js';
import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import type { Release } from '../admission/call-shares.js';
import type { HeldKind } from '../http/held-memory.js';
import type { V2Context } from '../v2/endpoint.js';
import { grpcCallHead } from './call-head.js';
import type { CallHead } from '../http/call-head.js';
import { requestIdOf } from '../proxy/headers.js';
import { peerAddress } from './peer.js';
import { runAsCall, type CallTrace } from '../../common/tracing/call-trace.js';
import { traceGrpcCall } from '../tracing/grpc-call.js';
import { restErrorOf, type CallStatus, type RestError } from './status.js';

/**
 * Calls whose key passed that a process holds at once, over every connection; more are refused.
 * One owner's keys hold at most their share of the replica's calls (callsPerOwner, REST's and
 * gRPC's together), from their metadata to their answer: messages never sent (each held for the
 * body time) or calls to a model of their own that never answers leave room for everyone else.
 */
const MAX_CALLS = 1_024;
/**
 * Answers sent and not yet read by their callers, held in the replica's shared budget
 * (gateway/http/held-memory.ts): HTTP/2 holds what a caller does not read, for as long as its
 * connection lives; the call cap counts calls, not bytes.
 */
const UNREAD: HeldKind = { advice: 'read your answers as they come' };
/**
 * Messages received and not yet answered: a call's message is held from its arrival (inflated: a
 * gzip frame of kilobytes may be a body limit) until it is answered, and a caller may open calls,
 * send their messages and never close them. The core's own copy of it (its tensors in the
 * binary layout) is this claim too: a message is counted once.
 */
const RECEIVED: HeldKind = {
  advice: "wait for answers, and close each call's stream once its message is sent",
};

/** An admitted call as its handler finds it: its grant, and the core's work it has running. */
export interface AdmittedCall {
  grant: KeyGrant;
  /** The call's metadata as the core reads it, made once as the call came (call-head.ts). */
  head: CallHead;
  /** Its request id: the caller's, when valid, or one made for it; in every answer and refusal. */
  requestId: string;
  /** Told as the core's work for the call begins and ends: what the call holds waits for it. */
  began(): void;
  ended(): void;
  /** The call's span, when tracing is on (its handler runs as it). */
  trace: CallTrace | undefined;
}

/** How an intercepted call ends before a handler answers it. */
export interface CallEnds {
  /** An error in REST's terms; a failure of the gateway's own is logged, as REST logs its own. */
  refusal(err: unknown): RestError;
  /** Sends a status of the gateway's, whatever it is made of, with the call's request id. */
  sendStatus(
    call: { sendStatus(status: CallStatus): void },
    err: RestError | CallStatus,
    requestId?: string,
  ): void;
  /** Answers an open method (health, server metadata) from its metadata alone. */
  answerOpen(path: string, metadata: Metadata, call: OpenCall, end: () => void): boolean;
}

export interface OpenCall {
  sendMetadata(metadata: Metadata): void;
  sendMessage(message: unknown, callback: () => void): void;
  sendStatus(status: CallStatus): void;
}

/**
 * The admission of every gRPC call, before its handler runs. The open methods are answered from
 * their metadata alone: their message is never read (nor inflated), so a caller without a key can
 * hold nothing. Every other call has its key checked from its metadata before its message is
 * read, as REST checks it before the body, by the placement's own check (the core's authenticate);
 * it then holds one of its owner's calls in flight and one of the replica's, and must have its
 * message whole (half-closed) within REST's body time. What the call holds is given back when it
 * ends and the core's work for it is done.
 */
export class CallAdmission {
  private calls = 0;
  /** Each admitted call by its metadata (its handler is given the same object). */
  private readonly admitted = new WeakMap<Metadata, AdmittedCall>();

  constructor(
    private readonly core: V2Context,
    private readonly ends: CallEnds,
  ) {}

  /** The admitted call a handler answers, by its metadata. */
  of(metadata: Metadata): AdmittedCall | undefined {
    return this.admitted.get(metadata);
  }

  readonly interceptor: ServerInterceptor = (descriptor, call) => {
    const { s } = this.core;
    let ended = false;
    /** The owner whose slot this call holds until it ends. */
    let holder: string | undefined;
    let release: Release | undefined;
    /** Cuts the call when its message is not whole within the body time. */
    let waiting: NodeJS.Timeout | undefined;
    /** The bytes of this call's answer until it is read (the call ends once it is). */
    let answering = 0;
    /** The bytes of this call's message, held until it is answered (or the call ends). */
    let receiving = 0;
    /** The core's work this call has running: what it holds waits for it. */
    let running = 0;
    /** Known once the call's metadata came: its refusals carry the id, and are counted by module. */
    let requestId: string | undefined;
    let module = 'none';
    /** The handler has the call: it counts it, whatever ends it after. */
    let handled = false;
    /** Its span, once its metadata came, when tracing is on: ended with the status it is sent. */
    let trace: CallTrace | undefined;
    const free = (): void => {
      if (!ended || running > 0) return;
      if (holder !== undefined) {
        this.calls--;
        release?.();
        s.heldMemory.release(holder, answering + receiving);
      }
      holder = undefined;
      release = undefined;
      answering = 0;
      receiving = 0;
    };
    const end = (): void => {
      ended = true;
      clearTimeout(waiting);
      free();
    };
    const refuse = (err: RestError | CallStatus): void => {
      end();
      // Counted as the handler's answers are (a cancelled call is nobody's answer); once the
      // handler has begun, it counts the call itself.
      if ('status' in err && !handled) {
        s.metrics.request('v2', err.status, module);
        if (err.status === 401) s.metrics.authFailure(err.code);
      }
      if ('status' in err) trace?.refused(err.code);
      this.ends.sendStatus(call, err, requestId);
    };
    const cancelled: CallStatus = { code: Status.CANCELLED, details: 'cancelled', metadata: new Metadata() };
    const admit = (
      grant: KeyGrant,
      head: CallHead,
      metadata: Metadata,
      next: (metadata: Metadata) => void,
    ): void => {
      module = grant.module;
      if (this.calls >= MAX_CALLS) {
        return refuse(
          restErrorOf(
            new TollgateError('gateway_busy', `this replica holds ${MAX_CALLS} gRPC calls; retry shortly`, {
              headers: { 'retry-after': '1' },
            }),
          ),
        );
      }
      try {
        release = s.admission.enter(grant);
      } catch (err) {
        return refuse(this.ends.refusal(err));
      }
      this.calls++;
      holder = grant.owner;
      // A call cancelled while the core works for it (a model that sleeps, say) still holds its
      // owner's slot, the replica's call and its memory until that work ends: cancelling cannot
      // free a slot for another call while the first goes on upstream.
      this.admitted.set(metadata, {
        grant,
        head,
        requestId: requestId ?? '',
        trace,
        began: () => {
          handled = true;
          running++;
        },
        ended: () => {
          running--;
          free();
        },
      });
      const ms = s.config.requestBodyTimeoutMs;
      waiting = setTimeout(
        () =>
          refuse(
            restErrorOf(
              new TollgateError(
                'request_timeout',
                `the call's message did not arrive whole within ${ms} ms; send it at once`,
              ),
            ),
          ),
        ms,
      );
      next(metadata);
    };
    return new ServerInterceptingCall(call, {
      sendStatus: (status, next) => {
        try {
          trace?.set({ 'rpc.response.status_code': String(status.code) });
          trace?.end(undefined, status.code === Status.OK ? undefined : `grpc_${status.code}`);
        } finally {
          next(status);
        }
      },
      sendMessage: (message, next) => {
        // The call's message is answered: what holds memory now is the answer, counted below.
        if (holder !== undefined) s.heldMemory.release(holder, receiving);
        receiving = 0;
        const bytes = answerBytes(message);
        if (holder !== undefined && bytes > 0) {
          // Not sent: the answer is dropped here, and the call ends with this status instead.
          const over = s.heldMemory.claim(holder, bytes, UNREAD);
          if (over !== undefined) return refuse(restErrorOf(over));
          answering = bytes;
        }
        next(message);
      },
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, next) => {
            const address = peerAddress(call.getPeer());
            // The connection is gone: there is nobody to answer.
            if (address === undefined) return refuse(cancelled);
            if (this.ends.answerOpen(descriptor.path, metadata, call, end)) return;
            const head = grpcCallHead(metadata, address, 'POST', descriptor.path);
            requestId = requestIdOf(head);
            trace = traceGrpcCall(s.tracing?.tracer, head, descriptor.path, s.proxies);
            const keys = metadata.get('authorization').length;
            if (keys > 1) {
              // REST refuses two Authorization headers; this says so in gRPC's terms.
              return refuse(
                restErrorOf(
                  new TollgateError(
                    'malformed_authorization',
                    `the call carries ${keys} authorization entries: send "authorization: Apikey <key>", once`,
                  ),
                ),
              );
            }
            Promise.resolve()
              .then(() => runAsCall(trace, () => this.core.access.authenticate(head)))
              .then(
                (grant) => {
                  if (!ended) admit(grant, head, metadata, next);
                },
                (err: unknown) => refuse(this.ends.refusal(err)),
              )
              .catch((err: unknown) => s.log.error({ err }, 'gRPC call not admitted'));
          },
          onReceiveMessage: (message: unknown, next: (message: unknown) => void) => {
            const bytes = Buffer.isBuffer(message) ? message.length : 0;
            if (holder !== undefined && bytes > 0) {
              // Not passed on: the message is dropped here, and the call ends with this status.
              const over = s.heldMemory.claim(holder, bytes, RECEIVED);
              if (over !== undefined) return refuse(restErrorOf(over));
              receiving += bytes;
            }
            next(message);
          },
          onReceiveHalfClose: (next) => {
            clearTimeout(waiting);
            next();
          },
          onCancel: () => {
            trace?.end(undefined, 'cancelled');
            end();
          },
        }),
    });
  };
}

/** The bytes an answer takes once sent, roughly: its raw tensors, which are nearly all of it. */
function answerBytes(message: unknown): number {
  const raw = (message as { raw_output_contents?: unknown } | null)?.raw_output_contents;
  if (!Array.isArray(raw)) return 0;
  let bytes = 0;
  for (const b of raw) if (Buffer.isBuffer(b)) bytes += b.length;
  return bytes;
}
