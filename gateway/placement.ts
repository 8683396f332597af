import type { GatewayConfig } from './config.js';

/**
 * Where a gateway runs. A central gateway holds the operator's grant signing key: it vouches for
 * calls, counts credits, writes the figures rollouts are judged on and keeps the payload log. A
 * sidecar trusts the key's public half and holds none, so its Redis user may write none of that.
 */
export type Placement = 'central' | 'sidecar';

/** The one place the placement is read from the settings. */
export function placementOf(config: Pick<GatewayConfig, 'grantSigningKeyFile'>): Placement {
  return config.grantSigningKeyFile === undefined ? 'sidecar' : 'central';
}
