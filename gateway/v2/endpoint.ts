import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KeyGrant } from '../../common/resources/grant.js';
import type { OperationDoc } from '../api/route.js';
import type { CallHead } from '../http/call-head.js';
import type { GatewayServices } from '../services.js';
import type { ModelAccess } from './access.js';
import type { Inference } from './inference.js';
import type { RuntimeClient } from './runtime-client.js';

/**
 * The V2 core every entry calls (REST's endpoints here, the gRPC service in gateway/grpc/): the
 * services, built once per placement (see core.ts).
 */
export interface V2Context {
  s: GatewayServices;
  access: ModelAccess;
  inference: Inference;
  runtimes: RuntimeClient;
}

/** One V2 call as the core takes it, whichever entry it came by. */
export interface V2Call {
  /** What the checks and the runtime's headers read of it (REST's request, or gRPC's metadata). */
  head: CallHead;
  requestId: string;
  /** The query string as sent, `?` included ("" for none; gRPC has none). */
  query: string;
  /**
   * Takes one of the key owner's calls in flight until the call ends (admission.enter); the gRPC
   * entry holds its call's from its metadata on, and takes none here.
   */
  holdSlot(grant: KeyGrant): void;
}

/** A model endpoint's target, from its path: `/v2/models/<model>[/versions/<version>]/...`. */
export interface ModelTarget {
  model: string;
  version: string | undefined;
  call: V2Call;
}

export type V2Endpoint<T = V2Call> = (
  ctx: V2Context,
  req: IncomingMessage,
  res: ServerResponse,
  target: T,
) => Promise<void>;

/** The Open Inference Protocol's gRPC methods (grpc/open-inference.proto) an endpoint may be answered by. */
export type GrpcMethod =
  'ServerLive' | 'ServerReady' | 'ServerMetadata' | 'ModelMetadata' | 'ModelReady' | 'ModelInfer';

/** A model's place in an endpoint's path: its name, then optionally `versions/<version>`. */
export const MODEL = '{model}';

interface EndpointBase {
  /** Its name, as paths.ts reports it. */
  name: string;
  method: 'GET' | 'POST';
  /** Its path after `/v2/`, by segment ([] for `/v2` itself); MODEL where a model's name goes. */
  path: readonly string[];
  /** Open to anyone (health, the server's metadata), or for a key. */
  security: 'none' | 'apikey';
  /** The gRPC method that answers the same call, if one does (gateway/grpc/). */
  grpc?: GrpcMethod;
  /**
   * Reachable under a workflow whose service the model is (`/events/bda/<wf>/<model>/v2/...`):
   * through the core, as /v2 checks it (`core`), or passed to its runtime (`runtime`).
   */
  underWorkflow?: 'core' | 'runtime';
  /** Its operation in the OpenAPI document (method, path and security are the endpoint's). */
  openapi?: Omit<OperationDoc, 'method' | 'path' | 'security' | 'pathParams'>;
}

/**
 * A V2 endpoint, declared once in its own file under endpoints/: the REST router, the events
 * router, the gRPC service and the OpenAPI document loop over the list (endpoints/index.ts).
 */
export type V2EndpointSpec = EndpointBase &
  ({ forModel: false; rest: V2Endpoint } | { forModel: true; rest: V2Endpoint<ModelTarget> });
