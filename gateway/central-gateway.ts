import type { Logger } from '../common/logger.js';
import type { GatewayConfig } from './config.js';
import { createGatewayServer, type CentralGateway } from './central-server.js';
import { createGatewayServices, type GatewayServices, type ServiceExtras } from './services.js';
import { createV2Core } from './v2/core.js';
import type { ModelDirectory } from './v2/model-directory.js';

/** What a program gives its central gateway: where Models come from, and the extras it serves. */
export interface CentralGatewayParts extends ServiceExtras {
  /** The Models the V2 core serves (the API server's, a manifest directory's, or none). */
  models: ModelDirectory;
}

export interface BuiltCentralGateway extends CentralGateway {
  /** The per-process services, built once: both entries (REST and gRPC) use these. */
  readonly services: GatewayServices;
}

/**
 * The central gateway's composition root: the per-process services, one V2 core over them (the
 * central placement), and the server that routes REST and gRPC to it. `tollgate gateway`,
 * `tollgate dev`, the bench and the tests all build it here, so each gets the program's wiring.
 */
export async function buildCentralGateway(
  config: GatewayConfig,
  log: Logger,
  { models, ...extras }: CentralGatewayParts,
): Promise<BuiltCentralGateway> {
  const services = await createGatewayServices(config, log, extras);
  return { ...createGatewayServer(services, createV2Core(services, models)), services };
}
