import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Http2Server } from 'node:http2';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import {
  Metadata,
  Server,
  ServerCredentials,
  ServerInterceptingCall,
  status as Status,
  type ConnectionInjector,
  type sendUnaryData,
  type ServerInterceptor,
  type ServerUnaryCall,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import inject from 'light-my-request';
import { TollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { isModelName } from '../../common/resources/model-name.js';
import { isVersionName } from '../../common/resources/model-versions.js';
import type { KeyChecker } from '../auth/key-check.js';
import type { Admission } from '../admission/admission.js';
import type { Release } from '../admission/call-shares.js';
import { slotHeldBy } from '../http/call-slot.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { logFailure, sendError, toTollgateError } from '../http/errors.js';
import { normalisePath, type NormalisedPath } from '../routing/normalise.js';
import { DecodeCost } from './decode-cost.js';
import { inferenceService, protocolTypes, type ModelInferRequest, type ModelRef } from './protocol.js';
import { restErrorOf, serviceError, type CallStatus, type RestError } from './status.js';
import { inferRequestBody, inferResponse, metadataResponse } from './tensors.js';
import type { HeldKind, HeldMemory } from '../http/held-memory.js';

/** The HTTP side a gRPC call is answered by: the gateway's (or a model sidecar's) request dispatch. */
export type Dispatch = (req: IncomingMessage, res: ServerResponse, path: NormalisedPath) => void;

export interface GrpcOptions {
  /** The key check (a gRPC call carries no grant: its key is checked in full). */
  keys: Pick<KeyChecker, 'check'>;
  /** The owner's share of calls in flight, REST and gRPC together (admission.enter). */
  admission: Pick<Admission, 'enter'>;
  bodyLimitBytes: number;
  /** The replica's budget for what calls hold, shared with REST's V2 bodies. */
  memory: HeldMemory;
  /** How long a call's message may take to arrive, whole (REST's body bound). */
  requestBodyTimeoutMs: number;
  log: Logger;
}

/** Call metadata the REST request carries: the credentials, the request id, the trace and the client's name. */
const PASSED = [
  'authorization',
  'x-request-id',
  'traceparent',
  'tracestate',
  'x-forwarded-for',
  'user-agent',
];

/**
 * Calls whose key passed that a process holds at once, over every connection; more are refused.
 * One owner's keys hold at most their share of the replica's calls (callsPerOwner, REST's and
 * gRPC's together), from their metadata to their answer: messages never sent (each held for the
 * body time) or calls to a model of their own that never answers leave room for everyone else.
 */
const MAX_CALLS = 1_024;
/**
 * Answers sent and not yet read by their callers, held in the replica's shared budget
 * (gateway/http/held-memory.ts): an answer is made whole before it is sent (up to twice the body
 * limit), and HTTP/2 holds what a caller does not read, for as long as its connection lives; the
 * call cap counts calls, not bytes.
 */
const UNREAD: HeldKind = { advice: 'read your answers as they come' };
/**
 * Messages received and not yet answered: a call's message is held from its arrival (inflated: a
 * gzip frame of kilobytes may be a body limit) until it is answered, and a caller may open calls,
 * send their messages and never close them.
 */
const RECEIVED: HeldKind = {
  advice: "wait for answers, and close each call's stream once its message is sent",
};
/** A message may decode into at most this multiple of the body limit. */
const DECODE_BOUND = 4;
const PLAIN_INTERNAL = { code: Status.INTERNAL, details: 'internal_error', metadata: new Metadata() };

interface RestAnswer {
  status: number;
  headers: OutgoingHttpHeaders;
  body: Buffer;
  json: Record<string, unknown> | undefined;
}

/** A REST answer other than the one the gRPC call wanted: its error, as the REST caller would get it. */
class Refused extends Error {
  constructor(readonly rest: RestError) {
    super(rest.message);
  }
}

/** Told as each REST request a gRPC call stands for begins and ends. */
interface RunningRest {
  began(): void;
  ended(): void;
}

/** The caller went away (cancelled, or past its deadline): nothing more is done for it. */
class Cancelled extends Error {}

function refusal(answer: RestAnswer): Refused {
  const code = typeof answer.json?.code === 'string' ? answer.json.code : 'internal_error';
  const message =
    typeof answer.json?.error === 'string' ? answer.json.error : `the gateway answered ${answer.status}`;
  const headers: Record<string, string> = {};
  const retryAfter = answer.headers['retry-after'];
  if (typeof retryAfter === 'string') headers['retry-after'] = retryAfter;
  const field = typeof answer.json?.field === 'string' ? answer.json.field : undefined;
  return new Refused({ status: answer.status, code, message, headers, ...(field ? { field } : {}) });
}

/**
 * The caller's address: grpc-js gives `<address>:<port>` (an IPv6 address unbracketed). Undefined
 * when it cannot be read (the connection is gone), and then nothing is done for the call: an
 * address taken for loopback could pass a key's network allowlist.
 */
export function peerAddress(peer: string): string | undefined {
  const at = peer.lastIndexOf(':');
  const address = at > 0 && /^\d+$/.test(peer.slice(at + 1)) ? peer.slice(0, at) : peer;
  return isIP(address) === 0 ? undefined : address;
}

/** One gRPC call as it is answered: its metadata, its peer, and the request id the REST side settled on. */
interface Exchange<Req = unknown> {
  request: Req;
  metadata: Metadata;
  address: string;
  cancelled: () => boolean;
  requestId?: string;
}

type Unary<Req, Res> = (call: ServerUnaryCall<Req, Res>, answer: sendUnaryData<Res>) => void;

/**
 * The Open Inference Protocol's gRPC service, answered by the V2 REST endpoints in process: each
 * call becomes the REST request it stands for (light-my-request builds it, no socket), so keys,
 * scopes, rate limits, credits, request checks, versions, the traffic split with its fallback,
 * shadow copies, payload logs and metrics are the same code for both protocols, and the runtime
 * behind is spoken to as it always is.
 *
 * What gRPC adds to REST's exposure is bounded here: the key is checked from the call's metadata
 * before its message is read; the message must arrive whole within REST's body time; a
 * ModelInferRequest is weighed on the wire before it is decoded, alone and with the others being
 * decoded; the calls a process holds are capped. Errors keep their codes (status.ts).
 */
export class GrpcGateway {
  private readonly server: Server;
  private readonly inferCost = new DecodeCost(protocolTypes().lookupType('inference.ModelInferRequest'));
  private readonly decodeInfer: (message: Buffer) => unknown;
  private calls = 0;
  /** Each admitted call's REST requests, by its metadata (the handler is given the same object). */
  private readonly running = new WeakMap<Metadata, RunningRest>();
  private injector: ConnectionInjector | undefined;
  /** The methods anyone may call (REST's health and server metadata are open), by path. */
  private readonly open: Record<string, (ex: Exchange) => Promise<object>> = {
    '/inference.GRPCInferenceService/ServerLive': async (ex) => ({
      live: (await this.rest(ex, 'GET', '/v2/health/live')).status === 200,
    }),
    '/inference.GRPCInferenceService/ServerReady': async (ex) => ({
      ready: (await this.rest(ex, 'GET', '/v2/health/ready')).status === 200,
    }),
    '/inference.GRPCInferenceService/ServerMetadata': async (ex) => {
      const answer = await this.expectJson(ex, 'GET', '/v2');
      return {
        name: String(answer.name ?? ''),
        version: String(answer.version ?? ''),
        extensions: Array.isArray(answer.extensions) ? answer.extensions.map(String) : [],
      };
    },
  };

  constructor(
    private readonly dispatch: Dispatch,
    private readonly opts: GrpcOptions,
  ) {
    this.server = new Server({
      'grpc.max_receive_message_length': opts.bodyLimitBytes,
      // An answer is REST's, read within the body limit and made raw: never larger than twice it.
      'grpc.max_send_message_length': 2 * opts.bodyLimitBytes,
      // A connection carries a bounded number of calls, and none lives for ever: clients
      // reconnect, and so move to other replicas as a load balancer would move REST clients.
      'grpc.max_concurrent_streams': 128,
      // As REST's keep-alive: a connection without a call in flight (or that never began one)
      // holds its session this long at most; the listener bounds how many there are.
      'grpc.max_connection_idle_ms': 65_000,
      'grpc.max_connection_age_ms': 30 * 60_000,
      // Room for a call held through a cold start and a slow runtime.
      'grpc.max_connection_age_grace_ms': 5 * 60_000,
      interceptors: [this.admission],
    });
    const service = inferenceService();
    const infer = service.ModelInfer;
    if (infer === undefined) throw new Error('open-inference.proto declares no ModelInfer');
    this.decodeInfer = infer.requestDeserialize;
    // ModelInfer's message is taken as bytes and decoded by its handler, once weighed.
    const raw: ServiceDefinition = {
      ...service,
      ModelInfer: { ...infer, requestDeserialize: (b: Buffer) => b },
    };
    this.server.addService(raw, this.handlers());
  }

  /**
   * Serves gRPC on connections accepted elsewhere (the shell's listener, gateway/server.ts), so the
   * port can be bound before this module is loaded. Calls `accept` once per connection.
   */
  accept(socket: Duplex): void {
    if (this.injector === undefined) {
      this.injector = this.server.createConnectionInjector(ServerCredentials.createInsecure());
      this.keepRepeatedKeys();
    }
    this.injector.injectConnection(socket);
  }

  /**
   * Node's HTTP/2 layer keeps the first of two `authorization` fields of a call (a header it holds
   * to one value) and drops the other, so a call carrying two keys would pass on the first; REST
   * refuses two Authorization headers. Before grpc-js reads a call's headers, every value its raw
   * headers carry is put back, and the call is refused as REST refuses it (inject, below). The
   * HTTP/2 server is the injector's, which grpc-js keeps in its `http2Servers` (not a public API:
   * should it go, the refusal is lost and the first key is checked, as before).
   */
  private keepRepeatedKeys(): void {
    const servers = (this.server as unknown as { http2Servers?: Map<Http2Server, unknown> }).http2Servers;
    const injected = servers === undefined ? undefined : [...servers.keys()].at(-1);
    if (injected === undefined) {
      this.opts.log.warn(
        'the gRPC server keeps no HTTP/2 server to watch: a call with two keys is checked on its first',
      );
      return;
    }
    injected.prependListener(
      'stream',
      (_stream: unknown, headers: IncomingHttpHeaders, _flags: number, raw: string[] | undefined) => {
        if (!Array.isArray(raw)) return;
        const keys: string[] = [];
        for (let i = 0; i + 1 < raw.length; i += 2)
          if (raw[i]?.toLowerCase() === 'authorization') keys.push(raw[i + 1] ?? '');
        if (keys.length > 1) (headers as Record<string, string | string[] | undefined>).authorization = keys;
      },
    );
  }

  /** Lets calls in flight finish, up to `timeoutMs`, then cuts what is left. */
  shutdown(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const deadline = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, timeoutMs);
      this.server.tryShutdown(() => {
        clearTimeout(deadline);
        resolve();
      });
    });
  }

  /**
   * The open methods are answered from their metadata alone: their message is never read (nor
   * inflated), so a caller without a key can hold nothing. Every other call has its key checked
   * from its metadata before its message is read, as REST checks it before the body, then counts
   * against the replica's cap and must have its message whole (half-closed) within REST's body
   * time.
   */
  private readonly admission: ServerInterceptor = (descriptor, call) => {
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
    /** The REST requests this call has running (rest(), below): what it holds waits for them. */
    let running = 0;
    const free = (): void => {
      if (!ended || running > 0) return;
      if (holder !== undefined) {
        this.calls--;
        release?.();
        this.opts.memory.release(holder, answering + receiving);
      }
      holder = undefined;
      release = undefined;
      answering = 0;
      receiving = 0;
    };
    // A call cancelled while its REST request runs (to a model that sleeps, say) still holds its
    // owner's slot, the replica's call and its memory until that request ends: cancelling cannot
    // free a slot for another call while the first goes on upstream.
    const tracked: RunningRest = {
      began: () => void running++,
      ended: () => {
        running--;
        free();
      },
    };
    const end = (): void => {
      ended = true;
      clearTimeout(waiting);
      free();
    };
    const refuse = (err: RestError | CallStatus): void => {
      end();
      this.sendStatus(call, 'status' in err ? this.statusOf(err) : err);
    };
    const cancelled: CallStatus = { code: Status.CANCELLED, details: 'cancelled', metadata: new Metadata() };
    return new ServerInterceptingCall(call, {
      sendMessage: (message, next) => {
        // The call's message is answered: what holds memory now is the answer, counted below.
        if (holder !== undefined) this.opts.memory.release(holder, receiving);
        receiving = 0;
        const bytes = answerBytes(message);
        if (holder !== undefined && bytes > 0) {
          // Not sent: the answer is dropped here, and the call ends with this status instead.
          const over = this.opts.memory.claim(holder, bytes, UNREAD);
          if (over !== undefined) return refuse(restErrorOf(over));
          answering = bytes;
        }
        next(message);
      },
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, admit) => {
            const address = peerAddress(call.getPeer());
            // The connection is gone: there is nobody to answer.
            if (address === undefined) return refuse(cancelled);
            const open = this.open[descriptor.path];
            if (open !== undefined) {
              const ex: Exchange = { request: undefined, metadata, address, cancelled: () => ended };
              open(ex)
                .then(
                  (value) => {
                    if (ended) return;
                    const headers = new Metadata();
                    headers.set('x-request-id', ex.requestId ?? randomUUID());
                    call.sendMetadata(headers);
                    call.sendMessage(value, () => {
                      end();
                      this.sendStatus(call, { code: Status.OK, details: 'OK', metadata: new Metadata() });
                    });
                  },
                  (err: unknown) => refuse(this.logged(err)),
                )
                .catch(this.unanswered);
              return;
            }
            this.keyChecked(metadata, address)
              .then(
                ({ answer, grant }) => {
                  if (ended) return;
                  if (answer.status !== 200 || grant === undefined) return refuse(refusal(answer).rest);
                  if (this.calls >= MAX_CALLS) {
                    return refuse(
                      restErrorOf(
                        new TollgateError(
                          'gateway_busy',
                          `this replica holds ${MAX_CALLS} gRPC calls; retry shortly`,
                          { headers: { 'retry-after': '1' } },
                        ),
                      ),
                    );
                  }
                  try {
                    release = this.opts.admission.enter(grant);
                  } catch (err) {
                    return refuse(restErrorOf(toTollgateError(err)));
                  }
                  this.calls++;
                  holder = grant.owner;
                  this.running.set(metadata, tracked);
                  const ms = this.opts.requestBodyTimeoutMs;
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
                  admit(metadata);
                },
                (err: unknown) => refuse(this.logged(err)),
              )
              .catch(this.unanswered);
          },
          onReceiveMessage: (message: unknown, next: (message: unknown) => void) => {
            const bytes = Buffer.isBuffer(message) ? message.length : 0;
            if (holder !== undefined && bytes > 0) {
              // Not passed on: the message is dropped here, and the call ends with this status.
              const over = this.opts.memory.claim(holder, bytes, RECEIVED);
              if (over !== undefined) return refuse(restErrorOf(over));
              receiving += bytes;
            }
            next(message);
          },
          onReceiveHalfClose: (next) => {
            clearTimeout(waiting);
            next();
          },
          onCancel: end,
        }),
    });
  };

  /** Whatever grpc-js throws while a call is answered is logged, never left to end the process. */
  private readonly unanswered = (err: unknown): void => {
    this.opts.log.error({ err }, 'gRPC call not answered');
  };

  /** A status grpc-js can send, whatever the error holds; a plain one if it could not be made. */
  private statusOf(err: RestError, requestId?: string): CallStatus {
    try {
      return serviceError(err, requestId);
    } catch (e) {
      this.opts.log.error({ err: e }, 'gRPC status not made; sending a plain one');
      return PLAIN_INTERNAL;
    }
  }

  private sendStatus(call: { sendStatus(status: CallStatus): void }, status: CallStatus): void {
    try {
      call.sendStatus(status);
    } catch (err) {
      this.opts.log.error({ err }, 'gRPC status not sent; sending a plain one');
      call.sendStatus(PLAIN_INTERNAL);
    }
  }

  private handlers(): UntypedServiceImplementation {
    return {
      ModelMetadata: this.unary(async (ex: Exchange<ModelRef>) => {
        const path = await this.modelPath(ex, ex.request.name, ex.request.version);
        return metadataResponse(await this.expectJson(ex, 'GET', path));
      }),
      ModelReady: this.unary(async (ex: Exchange<ModelRef>) => {
        const path = await this.modelPath(ex, ex.request.name, ex.request.version);
        const answer = await this.rest(ex, 'GET', `${path}/ready`);
        if (answer.status === 200) return { ready: true };
        // Known, and not ready now: an answer, not an error.
        if (answer.json?.ready === false || answer.json?.code === 'model_not_ready') return { ready: false };
        throw refusal(answer);
      }),
      ModelInfer: this.unary(async (ex: Exchange<Buffer>) => {
        const { request, translated } = this.translated(ex.request);
        const path = await this.modelPath(ex, request.model_name, request.model_version);
        const answer = await this.rest(ex, 'POST', `${path}/infer`, {
          payload: translated.body,
          headers: {
            'content-type': 'application/octet-stream',
            'inference-header-content-length': String(translated.headerLength),
          },
        });
        if (answer.status !== 200) throw refusal(answer);
        const headerLength = answer.headers['inference-header-content-length'];
        return inferResponse(
          answer.body,
          typeof headerLength === 'string' ? Number(headerLength) : undefined,
        );
      }),
    };
  }

  /**
   * A ModelInferRequest weighed, decoded and translated into its REST body. Its key passed, so a
   * message that cannot be one is refused at once, as nothing of any model's is read for it.
   */
  private translated(message: Buffer): {
    request: ModelInferRequest;
    translated: { body: Buffer; headerLength: number };
  } {
    const limit = this.opts.bodyLimitBytes;
    // Decoding is synchronous: one message at a time holds its decoded form, dropped once translated.
    if (this.inferCost.of(message) > DECODE_BOUND * limit) {
      throw new TollgateError(
        'body_too_large',
        `the ModelInferRequest would decode into more than ${DECODE_BOUND * limit} bytes (its tensors, entries and typed values); send the tensors in raw_input_contents, or fewer rows per call`,
      );
    }
    let request: ModelInferRequest;
    try {
      request = this.decodeInfer(message) as ModelInferRequest;
    } catch (err) {
      throw new TollgateError(
        'bad_request',
        `the message is not a valid ModelInferRequest: ${(err as Error).message}`,
      );
    }
    const translated = inferRequestBody(request);
    if (translated.body.length > limit) {
      throw new TollgateError(
        'body_too_large',
        `the tensors come to ${translated.body.length} bytes as the runtime reads them (INT64 values take 8 bytes each, whatever their size on the wire), past the gateway's limit of ${limit}; send fewer rows per call`,
      );
    }
    return { request, translated };
  }

  /**
   * The REST path of a model (and version). A name no model or version can have never becomes a
   * path: refused as REST refuses it, after the key's checks for that model.
   */
  private async modelPath(ex: Exchange, model: string, version: string): Promise<string> {
    if (model === '') {
      throw new TollgateError('invalid_field', 'model_name is empty: name the model to call (model-<id>)', {
        field: 'model_name',
      });
    }
    if (!isModelName(model)) {
      throw new TollgateError(
        'model_not_found',
        `no model named '${model}'; model names look like model-<id>`,
      );
    }
    const base = `/v2/models/${model}`;
    if (version === '') return base;
    if (isVersionName(version)) return `${base}/versions/${version}`;
    // The key's checks for the model, then REST's own answer for a version it does not have.
    const answer = await this.rest(ex, 'GET', `${base}/versions/-/ready`);
    if (answer.json?.code !== 'model_version_not_found') throw refusal(answer);
    throw new TollgateError(
      'model_version_not_found',
      `model '${model}' has no version '${version}'; versions are lower-case letters, digits and dashes`,
    );
  }

  private async expectJson(
    ex: Exchange,
    method: 'GET' | 'POST',
    path: string,
  ): Promise<Record<string, unknown>> {
    const answer = await this.rest(ex, method, path);
    if (answer.status !== 200) throw refusal(answer);
    if (answer.json === undefined) {
      throw new TollgateError(
        'model_failed',
        `the answer to ${path} is not a JSON object; see the runtime's logs`,
      );
    }
    return answer.json;
  }

  /** The key's check as REST makes it, on the call's metadata as headers, and the grant of a key that passed. */
  private async keyChecked(
    metadata: Metadata,
    address: string,
  ): Promise<{ answer: RestAnswer; grant: KeyGrant | undefined }> {
    const ex = { request: undefined, metadata, address, cancelled: () => false };
    let passed: KeyGrant | undefined;
    const answer = await this.inject(ex, 'GET', '/', undefined, (req, res) => {
      Promise.resolve()
        .then(() => this.opts.keys.check(req))
        .then(
          (grant) => {
            passed = grant;
            res.end();
          },
          (err: unknown) => sendError(res, err, this.opts.log),
        );
    });
    return { answer, grant: passed };
  }

  /**
   * The REST request a gRPC call stands for, dispatched in process. A call whose caller went away
   * goes no further; one already dispatched finishes, as a REST call whose client left does.
   */
  private rest(
    ex: Exchange,
    method: 'GET' | 'POST',
    path: string,
    body?: { payload: Buffer; headers: Record<string, string> },
  ): Promise<RestAnswer> {
    if (ex.cancelled()) throw new Cancelled();
    const running = this.running.get(ex.metadata);
    running?.began();
    // The REST body made of the message is held in the budget beside it (both are in memory).
    return this.inject(ex, method, path, body, (req, res) => {
      // The call holds its owner's slot from its metadata on (admission above).
      slotHeldBy(req);
      this.dispatch(req, res, normalisePath(req.url ?? '/'));
    }).finally(() => running?.ended());
  }

  private async inject(
    ex: Exchange,
    method: 'GET' | 'POST',
    path: string,
    body: { payload: Buffer; headers: Record<string, string> } | undefined,
    listener: (req: IncomingMessage, res: ServerResponse) => void,
  ): Promise<RestAnswer> {
    // Two keys in one call: refused, as REST refuses two Authorization headers.
    const keys = ex.metadata.get('authorization').length;
    if (keys > 1) {
      throw new TollgateError(
        'malformed_authorization',
        `the call carries ${keys} authorization entries: send "authorization: Apikey <key>", once`,
      );
    }
    const headers: Record<string, string> = { 'user-agent': 'grpc', ...body?.headers };
    for (const name of PASSED) {
      const [value] = ex.metadata.get(name);
      if (typeof value === 'string') headers[name] = value;
    }
    const answer = await inject(listener, {
      method,
      url: path,
      headers,
      remoteAddress: ex.address,
      ...(body === undefined ? {} : { payload: body.payload }),
    });
    const requestId = answer.headers['x-request-id'];
    if (typeof requestId === 'string') ex.requestId = requestId;
    const type = answer.headers['content-type'];
    let json: Record<string, unknown> | undefined;
    if (typeof type === 'string' && type.startsWith('application/json')) {
      try {
        const parsed: unknown = JSON.parse(answer.payload);
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
          json = parsed as Record<string, unknown>;
      } catch {
        json = undefined;
      }
    }
    return { status: answer.statusCode, headers: answer.headers, body: answer.rawPayload, json };
  }

  /** An error's REST form; a failure of the gRPC side itself is logged (at most once a second per code), as REST logs its own. */
  private logged(err: unknown): RestError {
    if (err instanceof Refused) return err.rest;
    const known = toTollgateError(err);
    if (known.status >= 500) logFailure(this.opts.log, known);
    return restErrorOf(known);
  }

  /** A unary handler: its answer with the request id in the headers, or its error as a gRPC status. */
  private unary<Req, Res>(handle: (ex: Exchange<Req>) => Promise<Res>): Unary<Req, Res> {
    return (call, answer) => {
      const address = peerAddress(call.getPeer());
      const ex: Exchange<Req> = {
        request: call.request,
        metadata: call.metadata,
        address: address ?? '',
        cancelled: () => call.cancelled || address === undefined,
      };
      const send = (error: CallStatus | null, value?: Res): void => {
        try {
          if (error === null) {
            const headers = new Metadata();
            headers.set('x-request-id', ex.requestId ?? randomUUID());
            call.sendMetadata(headers);
            answer(null, value);
          } else {
            answer(error);
          }
        } catch (err) {
          this.opts.log.error({ err }, 'gRPC answer not sent; sending a plain error');
          answer(PLAIN_INTERNAL);
        }
      };
      handle(ex)
        .then(
          (value) => send(null, value),
          (err: unknown) => {
            if (err instanceof Cancelled) {
              send({ code: Status.CANCELLED, details: 'cancelled', metadata: new Metadata() });
              return;
            }
            send(this.statusOf(this.logged(err), ex.requestId));
          },
        )
        .catch(this.unanswered);
    };
  }
}

/** The bytes an answer takes once sent, roughly: its raw tensors, which are nearly all of it. */
function answerBytes(message: unknown): number {
  const raw = (message as { raw_output_contents?: unknown } | null)?.raw_output_contents;
  if (!Array.isArray(raw)) return 0;
  let bytes = 0;
  for (const b of raw) if (Buffer.isBuffer(b)) bytes += b.length;
  return bytes;
}
