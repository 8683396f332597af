import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { randomUUID } from 'node:crypto';
import {
  Metadata,
  Server,
  ServerCredentials,
  ServerInterceptingCall,
  status as Status,
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
import { sendError } from '../http/errors.js';
import { normalisePath, type NormalisedPath } from '../routing/normalise.js';
import { inferRequestCost } from './decode-cost.js';
import { inferenceService, type ModelInferRequest, type ModelRef } from './protocol.js';
import { restErrorOf, serviceError, type RestError } from './status.js';
import { inferRequestBody, inferResponse, metadataResponse } from './tensors.js';

/** The HTTP side a gRPC call is answered by: the gateway's (or a model sidecar's) request dispatch. */
export type Dispatch = (req: IncomingMessage, res: ServerResponse, path: NormalisedPath) => void;

export interface GrpcOptions {
  /** The key check (a gRPC call carries no grant: its key is checked in full). */
  keys: Pick<KeyChecker, 'check'>;
  bodyLimitBytes: number;
  /** How long a call's message may take to arrive once its key passed (REST's body bound). */
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

/** The methods anyone may call, as REST's health and server metadata are open. */
const OPEN = new Set([
  '/inference.GRPCInferenceService/ServerLive',
  '/inference.GRPCInferenceService/ServerReady',
  '/inference.GRPCInferenceService/ServerMetadata',
]);

/** Decoding may hold at most this multiple of the body limit (a JSON body of that size parses into about as much). */
const DECODE_BOUND = 8;

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
 * when it cannot be read, and then the call is refused: an address taken for loopback could pass
 * a key's network allowlist.
 */
export function peerAddress(peer: string): string | undefined {
  const at = peer.lastIndexOf(':');
  const address = at > 0 && /^\d+$/.test(peer.slice(at + 1)) ? peer.slice(0, at) : peer;
  return isIP(address) === 0 ? undefined : address;
}

/** A ModelInferRequest too costly to decode: refused by the handler instead of decoded. */
class Undecoded {
  constructor(readonly refusal: TollgateError) {}
}

/** One gRPC call as it is answered: its metadata, its peer, and the request id the REST side settled on. */
interface Exchange<Req = unknown> {
  request: Req;
  metadata: Metadata;
  address: string;
  signal?: AbortSignal;
  requestId?: string;
}

type Unary<Req, Res> = (call: ServerUnaryCall<Req, Res>, answer: sendUnaryData<Res>) => void;

/**
 * The Open Inference Protocol's gRPC service, answered by the V2 REST endpoints in process: each
 * call becomes the REST request it stands for (light-my-request builds it, no socket), so keys,
 * scopes, rate limits, credits, request checks, versions, the traffic split with its fallback,
 * shadow copies, payload logs and metrics are the same code for both protocols, and the runtime
 * behind is spoken to as it always is. The key is checked from the call's metadata before its
 * message is read; a message is refused before decoding when it would decode into too much.
 * Errors keep their codes (status.ts).
 */
export class GrpcGateway {
  private readonly server: Server;

  constructor(
    private readonly dispatch: Dispatch,
    private readonly opts: GrpcOptions,
  ) {
    this.server = new Server({
      'grpc.max_receive_message_length': opts.bodyLimitBytes,
      'grpc.max_send_message_length': -1,
      // A connection carries a bounded number of calls, and none lives for ever: clients
      // reconnect, and so move to other replicas as a load balancer would move REST clients.
      'grpc.max_concurrent_streams': 128,
      'grpc.max_connection_idle_ms': 5 * 60_000,
      'grpc.max_connection_age_ms': 30 * 60_000,
      'grpc.max_connection_age_grace_ms': 60_000,
      interceptors: [this.admission],
    });
    this.server.addService(this.service(), this.handlers());
  }

  listen(port: number, host: string): Promise<number> {
    const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    return new Promise((resolve, reject) => {
      this.server.bindAsync(address, ServerCredentials.createInsecure(), (err, bound) =>
        err ? reject(err) : resolve(bound),
      );
    });
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

  /** The service, its ModelInfer messages weighed before they are decoded. */
  private service(): ServiceDefinition {
    const service = inferenceService();
    const infer = service.ModelInfer;
    if (infer === undefined) throw new Error('open-inference.proto declares no ModelInfer');
    const max = DECODE_BOUND * this.opts.bodyLimitBytes;
    const decode = (message: Buffer): unknown => {
      let cost: number;
      try {
        cost = inferRequestCost(message);
      } catch {
        return new Undecoded(
          new TollgateError('bad_request', 'the ModelInferRequest message is not valid protobuf'),
        );
      }
      if (cost > max) {
        return new Undecoded(
          new TollgateError(
            'body_too_large',
            `the ModelInferRequest would decode into more than ${max} bytes (its entries and typed values); send the tensors in raw_input_contents, or fewer rows per call`,
          ),
        );
      }
      return infer.requestDeserialize(message);
    };
    return { ...service, ModelInfer: { ...infer, requestDeserialize: decode } };
  }

  /**
   * Every call but the open ones has its key checked from its metadata before its message is
   * read (as REST checks it before the body), and its message must then arrive within the body
   * bound.
   */
  private readonly admission: ServerInterceptor = (descriptor, call) => {
    let waiting: NodeJS.Timeout | undefined;
    const stopWaiting = (): void => clearTimeout(waiting);
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, admit) => {
            if (OPEN.has(descriptor.path)) return admit(metadata);
            const address = peerAddress(call.getPeer());
            if (address === undefined) {
              this.opts.log.error({ peer: call.getPeer() }, 'gRPC call from an address that cannot be read');
              return call.sendStatus({
                code: Status.INTERNAL,
                details: "internal_error: the caller's address cannot be read",
              });
            }
            this.keyChecked(metadata, address).then(
              (answer) => {
                if (answer.status !== 200) return call.sendStatus(serviceError(refusal(answer).rest));
                const ms = this.opts.requestBodyTimeoutMs;
                waiting = setTimeout(() => {
                  call.sendStatus(
                    serviceError(
                      restErrorOf(
                        new TollgateError(
                          'request_timeout',
                          `the call's message did not arrive within ${ms} ms; send it at once`,
                        ),
                      ),
                    ),
                  );
                }, ms);
                admit(metadata);
              },
              (err: unknown) => call.sendStatus(serviceError(this.logged(err))),
            );
          },
          onReceiveMessage: (message, pass) => {
            stopWaiting();
            pass(message);
          },
          onCancel: stopWaiting,
        }),
    });
  };

  private handlers(): UntypedServiceImplementation {
    return {
      ServerLive: this.unary(async (ex) => ({
        live: (await this.rest(ex, 'GET', '/v2/health/live')).status === 200,
      })),
      ServerReady: this.unary(async (ex) => ({
        ready: (await this.rest(ex, 'GET', '/v2/health/ready')).status === 200,
      })),
      ServerMetadata: this.unary(async (ex) => {
        const answer = await this.expectJson(ex, 'GET', '/v2');
        return {
          name: String(answer.name ?? ''),
          version: String(answer.version ?? ''),
          extensions: Array.isArray(answer.extensions) ? answer.extensions.map(String) : [],
        };
      }),
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
      ModelInfer: this.unary(async (ex: Exchange<ModelInferRequest | Undecoded>) => {
        const { request } = ex;
        if (request instanceof Undecoded) throw request.refusal;
        const path = await this.modelPath(ex, request.model_name, request.model_version);
        let translated: { body: Buffer; headerLength: number };
        try {
          translated = inferRequestBody(request);
        } catch (err) {
          // Refused as REST refuses a bad body: once the key may call the model (role, scope,
          // rate limit, price), as a body REST cannot read.
          const answer = await this.rest(ex, 'POST', `${path}/infer`);
          if (answer.status !== 400) throw refusal(answer);
          throw err;
        }
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
        `no model named '${model.slice(0, 100)}'; model names look like model-<id>`,
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
      `model '${model}' has no version '${version.slice(0, 100)}'; versions are lower-case letters, digits and dashes`,
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

  /** The key check alone, on the call's metadata as REST would see its headers: 200, or its error. */
  private keyChecked(metadata: Metadata, address: string): Promise<RestAnswer> {
    return this.inject({ request: undefined, metadata, address }, 'GET', '/', undefined, (req, res) => {
      Promise.resolve()
        .then(() => this.opts.keys.check(req))
        .then(
          () => res.end(),
          (err: unknown) => sendError(res, err),
        );
    });
  }

  /** The REST request a gRPC call stands for, dispatched in process. */
  private rest(
    ex: Exchange,
    method: 'GET' | 'POST',
    path: string,
    body?: { payload: Buffer; headers: Record<string, string> },
  ): Promise<RestAnswer> {
    return this.inject(ex, method, path, body, (req, res) =>
      this.dispatch(req, res, normalisePath(req.url ?? '/')),
    );
  }

  private async inject(
    ex: Exchange,
    method: 'GET' | 'POST',
    path: string,
    body: { payload: Buffer; headers: Record<string, string> } | undefined,
    listener: (req: IncomingMessage, res: ServerResponse) => void,
  ): Promise<RestAnswer> {
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
      ...(ex.signal === undefined ? {} : { signal: ex.signal }),
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

  /** An error's REST form; one the gateway did not expect is logged, as REST logs it. */
  private logged(err: unknown): RestError {
    if (err instanceof Refused) return err.rest;
    const rest = restErrorOf(err);
    if (rest.status >= 500)
      this.opts.log.error({ err, code: rest.code }, `gRPC call failed: ${rest.message}`);
    return rest;
  }

  /** A unary handler: its answer with the request id in the headers, or its error as a gRPC status. */
  private unary<Req, Res>(handle: (ex: Exchange<Req>) => Promise<Res>): Unary<Req, Res> {
    return (call, answer) => {
      const address = peerAddress(call.getPeer());
      if (address === undefined) {
        answer(serviceError(restErrorOf(new Error(`unreadable peer ${call.getPeer()}`))));
        return;
      }
      // A caller gone, or past its deadline: the REST call is cut as a REST client's would be.
      const cancelled = new AbortController();
      call.once('cancelled', () => cancelled.abort());
      const ex: Exchange<Req> = {
        request: call.request,
        metadata: call.metadata,
        address,
        signal: cancelled.signal,
      };
      handle(ex).then(
        (value) => {
          const headers = new Metadata();
          headers.set('x-request-id', ex.requestId ?? randomUUID());
          call.sendMetadata(headers);
          answer(null, value);
        },
        (err: unknown) => answer(serviceError(this.logged(err), ex.requestId)),
      );
    };
  }
}
