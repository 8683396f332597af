import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayServices } from '../services.js';
import type { ModelAccess } from './access.js';
import type { Inference } from './inference.js';
import type { RuntimeClient } from './runtime-client.js';

/** What every V2 endpoint is given: the services, built once per gateway (see router.ts). */
export interface V2Context {
  s: GatewayServices;
  access: ModelAccess;
  inference: Inference;
  runtimes: RuntimeClient;
}

/** A model endpoint's target, from its path: `/v2/models/<model>[/versions/<version>]/...`. */
export interface ModelTarget {
  model: string;
  version: string | undefined;
  requestId: string;
  /** The query string as sent, `?` included ("" for none). */
  query: string;
}

export type V2Endpoint<T = undefined> = (
  ctx: V2Context,
  req: IncomingMessage,
  res: ServerResponse,
  target: T,
) => Promise<void>;
