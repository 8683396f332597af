import type { IncomingHttpHeaders } from 'node:http';
import type { Http2Server } from 'node:http2';
import type { Duplex } from 'node:stream';
import {
  Metadata,
  Server,
  ServerCredentials,
  status as Status,
  type ConnectionInjector,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServiceDefinition,
  type UntypedHandleCall,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { logFailure, toTollgateError } from '../http/errors.js';
import { requestIdOf } from '../proxy/headers.js';
import type { GrpcMethod, V2Context } from '../v2/endpoint.js';
import { V2_ENDPOINTS } from '../v2/endpoints/index.js';
import { serverReady } from '../v2/endpoints/health.js';
import { SERVER_METADATA } from '../v2/endpoints/server-metadata.js';
import { CallAdmission, type CallEnds, type OpenCall } from './call-admission.js';
import { grpcCallHead } from './call-head.js';
import { InferenceMethods, MAX_ANSWER, type Exchange } from './methods.js';
import { runAsCall } from '../../common/tracing/call-trace.js';
import { peerAddress } from './peer.js';
import { inferenceService } from './protocol.js';
import { restErrorOf, serviceError, type CallStatus, type RestError } from './status.js';

const PLAIN_INTERNAL = { code: Status.INTERNAL, details: 'internal_error', metadata: new Metadata() };

/** The caller went away (cancelled, or past its deadline): nothing more is done for it. */
class Cancelled extends Error {}

type Unary<Req, Res> = (call: ServerUnaryCall<Req, Res>, answer: sendUnaryData<Res>) => void;

/**
 * The Open Inference Protocol's gRPC service, answered by the placement's V2 core in process (the
 * same access checks, inference, versions, traffic split with its fallback, shadow copies,
 * payload logs and metrics as REST's endpoints call): the key is checked once, from the call's
 * metadata, before its message is read; the message's tensors are translated once; the runtime's
 * answer is read once into the ModelInferResponse.
 *
 * What gRPC adds to REST's exposure is bounded here and in call-admission.ts: the message must
 * arrive whole within REST's body time; a ModelInferRequest is weighed on the wire before it is
 * decoded; the calls a process holds are capped. Errors keep their codes (status.ts).
 */
export class GrpcGateway implements CallEnds {
  private readonly server: Server;
  private readonly admission: CallAdmission;
  private readonly methods: InferenceMethods;
  private injector: ConnectionInjector | undefined;
  /** The methods anyone may call (those of the endpoints open to anyone), by path. */
  private readonly open = new Map<string, () => Promise<object>>();

  constructor(private readonly core: V2Context) {
    const limit = core.s.config.bodyLimitBytes;
    this.admission = new CallAdmission(core, this);
    this.methods = new InferenceMethods(core);
    this.server = new Server({
      'grpc.max_receive_message_length': limit,
      // An answer is read within the body limit and made raw, refused past this (methods.ts).
      // The margin is for protobuf's framing of what is not a tensor, which may take more than
      // its JSON did (methods.ts counts the JSON's size once).
      'grpc.max_send_message_length': (MAX_ANSWER + 1) * limit,
      // A connection carries a bounded number of calls, and none lives for ever: clients
      // reconnect, and so move to other replicas as a load balancer would move REST clients.
      'grpc.max_concurrent_streams': 128,
      // As REST's keep-alive: a connection without a call in flight (or that never began one)
      // holds its session this long at most; the listener bounds how many there are.
      'grpc.max_connection_idle_ms': 65_000,
      'grpc.max_connection_age_ms': 30 * 60_000,
      // Room for a call held through a cold start and a slow runtime.
      'grpc.max_connection_age_grace_ms': 5 * 60_000,
      interceptors: [this.admission.interceptor],
    });
    const service = inferenceService();
    const infer = service.ModelInfer;
    if (infer === undefined) throw new Error('open-inference.proto declares no ModelInfer');
    // ModelInfer's message is taken as bytes and decoded by its handler, once weighed.
    const raw: ServiceDefinition = {
      ...service,
      ModelInfer: { ...infer, requestDeserialize: (b: Buffer) => b },
    };
    this.server.addService(raw, this.declared(infer.requestDeserialize));
  }

  /**
   * The methods the V2 endpoints declare (gateway/v2/endpoints/), each answered as its endpoint's
   * call; a method no endpoint declares is UNIMPLEMENTED.
   */
  private declared(decodeInfer: (message: Buffer) => unknown): UntypedServiceImplementation {
    const m = this.methods;
    const open: Partial<Record<GrpcMethod, () => Promise<object>>> = {
      ServerLive: async () => ({ live: true }),
      ServerReady: async () => ({ ready: await serverReady(this.core.s) }),
      ServerMetadata: async () => SERVER_METADATA,
    };
    const keyed: Partial<Record<GrpcMethod, UntypedHandleCall>> = {
      ModelMetadata: this.unary('GET', (ex) => m.modelMetadata(ex)),
      ModelReady: this.unary('GET', (ex) => m.modelReady(ex)),
      ModelInfer: this.unary('POST', (ex: Exchange<Buffer>) => m.modelInfer(ex, decodeInfer)),
    };
    const implementation: UntypedServiceImplementation = {};
    for (const endpoint of V2_ENDPOINTS) {
      const method = endpoint.grpc;
      if (method === undefined) continue;
      const answerOpen = endpoint.security === 'none' ? open[method] : undefined;
      const handler = endpoint.security === 'none' ? undefined : keyed[method];
      if (answerOpen !== undefined) this.open.set(`/inference.GRPCInferenceService/${method}`, answerOpen);
      else if (handler !== undefined) implementation[method] = handler;
      else throw new Error(`${endpoint.name} declares gRPC's ${method}, which has no answer here`);
    }
    return implementation;
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
   * headers carry is put back, and the call is refused as REST refuses it (call-admission.ts). The
   * HTTP/2 server is the injector's, which grpc-js keeps in its `http2Servers` (not a public API:
   * should it go, the refusal is lost and the first key is checked, as before).
   */
  private keepRepeatedKeys(): void {
    const servers = (this.server as unknown as { http2Servers?: Map<Http2Server, unknown> }).http2Servers;
    const injected = servers === undefined ? undefined : [...servers.keys()].at(-1);
    if (injected === undefined) {
      this.core.s.log.warn(
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

  answerOpen(path: string, metadata: Metadata, call: OpenCall, end: () => void): boolean {
    const open = this.open.get(path);
    if (open === undefined) return false;
    open()
      .then(
        (value) => {
          const headers = new Metadata();
          headers.set('x-request-id', requestIdOf(grpcCallHead(metadata, '', 'GET', path)));
          call.sendMetadata(headers);
          call.sendMessage(value, () => {
            end();
            this.sendStatus(call, { code: Status.OK, details: 'OK', metadata: new Metadata() });
          });
        },
        (err: unknown) => {
          end();
          this.sendStatus(call, this.refusal(err));
        },
      )
      .catch(this.unanswered);
    return true;
  }

  /** Whatever grpc-js throws while a call is answered is logged, never left to end the process. */
  private readonly unanswered = (err: unknown): void => {
    this.core.s.log.error({ err }, 'gRPC call not answered');
  };

  refusal(err: unknown): RestError {
    const known = toTollgateError(err);
    if (known.status >= 500) logFailure(this.core.s.log, known);
    return restErrorOf(known);
  }

  /** A status grpc-js can send, whatever the error holds; a plain one if it could not be made. */
  private statusOf(err: RestError, requestId?: string): CallStatus {
    try {
      return serviceError(err, requestId);
    } catch (e) {
      this.core.s.log.error({ err: e }, 'gRPC status not made; sending a plain one');
      return PLAIN_INTERNAL;
    }
  }

  sendStatus(
    call: { sendStatus(status: CallStatus): void },
    err: RestError | CallStatus,
    requestId?: string,
  ): void {
    const status = 'status' in err ? this.statusOf(err, requestId) : err;
    try {
      call.sendStatus(status);
    } catch (e) {
      this.core.s.log.error({ err: e }, 'gRPC status not sent; sending a plain one');
      call.sendStatus(PLAIN_INTERNAL);
    }
  }

  /**
   * A unary handler on an admitted call: its answer with the request id in the headers, or its
   * error as a gRPC status. A call whose caller went away goes no further; one the core works on
   * finishes, as a REST call whose client left does.
   */
  private unary<Req, Res>(
    method: 'GET' | 'POST',
    handle: (ex: Exchange<Req>) => Promise<Res>,
  ): Unary<Req, Res> {
    return (call, answer) => {
      const address = peerAddress(call.getPeer());
      const admitted = this.admission.of(call.metadata);
      if (address === undefined || admitted === undefined) {
        answer({ code: Status.CANCELLED, details: 'cancelled', metadata: new Metadata() });
        return;
      }
      // The metadata as admission read it, under this method's name (GET for a metadata call).
      const ex: Exchange<Req> = {
        request: call.request,
        grant: admitted.grant,
        head: { ...admitted.head, method, url: call.getPath() },
        requestId: admitted.requestId,
      };
      const send = (error: CallStatus | null, value?: Res): void => {
        try {
          if (error === null) {
            const headers = new Metadata();
            headers.set('x-request-id', ex.requestId);
            call.sendMetadata(headers);
            answer(null, value);
          } else {
            answer(error);
          }
        } catch (err) {
          this.core.s.log.error({ err }, 'gRPC answer not sent; sending a plain error');
          answer(PLAIN_INTERNAL);
        }
      };
      const counted = (status: number): void =>
        this.core.s.metrics.request('v2', status, admitted.grant.module);
      admitted.began();
      Promise.resolve()
        .then(() => {
          if (call.cancelled) throw new Cancelled();
          return runAsCall(admitted.trace, () => handle(ex));
        })
        .then(
          (value) => {
            counted(200);
            send(null, value);
          },
          (err: unknown) => {
            if (err instanceof Cancelled) {
              send({ code: Status.CANCELLED, details: 'cancelled', metadata: new Metadata() });
              return;
            }
            const refused = this.refusal(err);
            admitted.trace?.refused(refused.code);
            counted(refused.status);
            send(this.statusOf(refused, ex.requestId));
          },
        )
        .catch(this.unanswered)
        .finally(() => admitted.ended());
    };
  }
}
