import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KeyGrant } from '../../common/resources/grant.js';
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
