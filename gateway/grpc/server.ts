import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import {
  Metadata,
  Server,
  ServerCredentials,
  type sendUnaryData,
  type ServerUnaryCall,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import inject from 'light-my-request';
import { TollgateError } from '../../common/errors.js';
import { isModelName } from '../../common/resources/model-name.js';
import { sendError } from '../http/errors.js';
import { normalisePath, type NormalisedPath } from '../routing/normalise.js';
import { inferenceService, type ModelInferRequest, type ModelRef } from './protocol.js';
import { restErrorOf, serviceError, type RestError } from './status.js';
import { inferRequestBody, inferResponse, metadataResponse } from './tensors.js';

/** The HTTP side a gRPC call is answered by: the gateway's (or a model sidecar's) request dispatch. */
export type Dispatch = (req: IncomingMessage, res: ServerResponse, path: NormalisedPath) => void;

/** Call metadata the REST request carries; the credentials, the request id and the trace, nothing else. */
const PASSED = ['authorization', 'x-request-id', 'traceparent', 'tracestate', 'x-forwarded-for'];

/** The names a Model's versions may have (crds/models.yaml): anything else names none. */
const VERSION_NAME = /^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$/;

interface RestAnswer {
  status: number;
  retryAfter: string | undefined;
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
  if (answer.retryAfter !== undefined) headers['retry-after'] = answer.retryAfter;
  return new Refused({ status: answer.status, code, message, headers });
}

/** `ipv4:10.0.0.7:51234`, `ipv6:[::1]:51234`: the peer's address, as a socket's remoteAddress. */
function peerAddress(peer: string): string | undefined {
  const v6 = /^ipv6:\[([^\]]+)\]/.exec(peer);
  if (v6) return v6[1];
  const v4 = /^ipv4:([\d.]+):\d+$/.exec(peer);
  return v4?.[1];
}

type Unary<Req, Res> = (call: ServerUnaryCall<Req, Res>, answer: sendUnaryData<Res>) => void;

/** One gRPC call as it is answered: its metadata, and the request id the REST side settled on. */
interface Exchange<Req = unknown> {
  request: Req;
  metadata: Metadata;
  peer: string;
  requestId?: string;
}

/**
 * The Open Inference Protocol's gRPC service, answered by the V2 REST endpoints in process: each
 * call becomes the REST request it stands for (light-my-request builds it, no socket), so keys,
 * scopes, rate limits, credits, request checks, versions, the traffic split with its fallback,
 * shadow copies, payload logs and metrics are the same code for both protocols, and the runtime
 * behind is spoken to as it always is. Errors keep their codes (status.ts).
 */
export class GrpcGateway {
  private readonly server: Server;

  constructor(
    private readonly dispatch: Dispatch,
    bodyLimitBytes: number,
  ) {
    this.server = new Server({
      'grpc.max_receive_message_length': bodyLimitBytes,
      'grpc.max_send_message_length': -1,
    });
    this.server.addService(inferenceService(), this.handlers());
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

  private handlers(): UntypedServiceImplementation {
    return {
      ServerLive: this.unary(async (ex) => ({
        live: (await this.rest(ex, 'GET', '/v2/health/live')).status === 200,
      })),
      ServerReady: this.unary(async (ex) => ({
        ready: (await this.rest(ex, 'GET', '/v2/health/ready')).status === 200,
      })),
      ServerMetadata: this.unary(async (ex) => {
        const answer = await this.expect200(ex, 'GET', '/v2');
        return {
          name: String(answer.name ?? ''),
          version: String(answer.version ?? ''),
          extensions: Array.isArray(answer.extensions) ? answer.extensions.map(String) : [],
        };
      }),
      ModelMetadata: this.unary(async (ex: Exchange<ModelRef>) => {
        const path = await this.modelPath(ex, ex.request.name, ex.request.version);
        return metadataResponse(await this.expect200(ex, 'GET', path));
      }),
      ModelReady: this.unary(async (ex: Exchange<ModelRef>) => {
        const path = await this.modelPath(ex, ex.request.name, ex.request.version);
        const answer = await this.rest(ex, 'GET', `${path}/ready`);
        if (answer.status === 200 || (answer.status === 503 && answer.json?.ready === false))
          return { ready: answer.status === 200 };
        throw refusal(answer);
      }),
      ModelInfer: this.unary(async (ex: Exchange<ModelInferRequest>) => {
        const { model_name: model, model_version: version } = ex.request;
        const path = await this.modelPath(ex, model, version);
        let translated: { body: Buffer; headerLength: number };
        try {
          translated = inferRequestBody(ex.request);
        } catch (err) {
          // Who may not call the model learns that first, as over REST, not what is wrong with the tensors.
          await this.accessChecked(ex, `${path}/ready`);
          throw err;
        }
        return inferResponse(
          await this.expect200(ex, 'POST', `${path}/infer`, {
            payload: translated.body,
            headers: {
              'content-type': 'application/octet-stream',
              'inference-header-content-length': String(translated.headerLength),
            },
          }),
        );
      }),
    };
  }

  /**
   * The REST path of a model (and version). A name no model can have is refused as REST refuses
   * it, once the caller's key passed: it never reaches a path, whatever its characters.
   */
  private async modelPath(ex: Exchange, model: string, version: string): Promise<string> {
    if (model === '') {
      throw new TollgateError('invalid_field', 'model_name is empty: name the model to call (model-<id>)', {
        field: 'model_name',
      });
    }
    if (!isModelName(model)) {
      await this.accessChecked(ex, '/v2/models');
      throw new TollgateError(
        'model_not_found',
        `no model named '${model}'; model names look like model-<id>`,
      );
    }
    const base = `/v2/models/${model}`;
    if (version === '') return base;
    if (!VERSION_NAME.test(version)) {
      await this.accessChecked(ex, `${base}/ready`);
      throw new TollgateError('model_version_not_found', `model '${model}' has no version '${version}'`);
    }
    return `${base}/versions/${version}`;
  }

  /** Refuses the call as REST would when its key may not reach `path`; readiness (which never wakes a model) or the model list. */
  private async accessChecked(ex: Exchange, path: string): Promise<void> {
    const answer = await this.rest(ex, 'GET', path);
    if (answer.status === 200 || (answer.status === 503 && answer.json?.ready === false)) return;
    throw refusal(answer);
  }

  private async expect200(
    ex: Exchange,
    method: 'GET' | 'POST',
    path: string,
    body?: { payload: Buffer; headers: Record<string, string> },
  ): Promise<Record<string, unknown>> {
    const answer = await this.rest(ex, method, path, body);
    if (answer.status !== 200) throw refusal(answer);
    if (answer.json === undefined) {
      throw new TollgateError('model_failed', `the runtime's answer to ${path} is not a JSON object`);
    }
    return answer.json;
  }

  /** The REST request a gRPC call stands for, dispatched in process. */
  private async rest(
    ex: Exchange,
    method: 'GET' | 'POST',
    path: string,
    body?: { payload: Buffer; headers: Record<string, string> },
  ): Promise<RestAnswer> {
    const headers: Record<string, string> = { ...body?.headers };
    for (const name of PASSED) {
      const [value] = ex.metadata.get(name);
      if (typeof value === 'string') headers[name] = value;
    }
    const remoteAddress = peerAddress(ex.peer);
    const answer = await inject(
      (req, res) => {
        let normalised: NormalisedPath;
        try {
          normalised = normalisePath(req.url ?? '/');
        } catch (err) {
          sendError(res, err);
          return;
        }
        this.dispatch(req, res, normalised);
      },
      {
        method,
        url: path,
        headers,
        ...(body === undefined ? {} : { payload: body.payload }),
        ...(remoteAddress === undefined ? {} : { remoteAddress }),
      },
    );
    const requestId = answer.headers['x-request-id'];
    if (typeof requestId === 'string') ex.requestId = requestId;
    let json: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = JSON.parse(answer.payload);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
        json = parsed as Record<string, unknown>;
    } catch {
      json = undefined;
    }
    const retryAfter = answer.headers['retry-after'];
    return {
      status: answer.statusCode,
      retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
      json,
    };
  }

  /** A unary handler: its answer with the request id in the headers, or its error as a gRPC status. */
  private unary<Req, Res>(handle: (ex: Exchange<Req>) => Promise<Res>): Unary<Req, Res> {
    return (call, answer) => {
      const ex: Exchange<Req> = { request: call.request, metadata: call.metadata, peer: call.getPeer() };
      handle(ex).then(
        (value) => {
          const headers = new Metadata();
          headers.set('x-request-id', ex.requestId ?? randomUUID());
          call.sendMetadata(headers);
          answer(null, value);
        },
        (err: unknown) => {
          const rest = err instanceof Refused ? err.rest : restErrorOf(err);
          answer(serviceError(rest, ex.requestId));
        },
      );
    };
  }
}
