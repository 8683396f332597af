/**
 * Every share a team holds of a replica, as `tollgate_gateway_share_refusals_total` names it
 * (docs/install.md lists each with its setting and its answer).
 */
export type Share =
  /** Calls in flight from one client address (an IPv6 /64 as one). */
  | 'calls_per_address'
  /** Calls in flight of one key owner, REST and gRPC together. */
  | 'calls_per_owner'
  /** The payload-log buffer, per team (the Models' namespace). */
  | 'payload_log_buffer'
  /** Shadow copies in flight, per team (the Models' namespace). */
  | 'shadow_copies'
  /** Webhook sends in flight, per endpoint owner. */
  | 'webhook_sends'
  /** Leak-report bytes being read, per client address. */
  | 'leak_report_bytes';

/**
 * Counts one refusal past a share: `team` is the key owner or the Models' namespace that held
 * it, "" where the share is a client address's (an address is no team, and as a label it would
 * grow without bound).
 */
export type ShareRefused = (share: Share, team: string) => void;

export const NO_COUNT: ShareRefused = () => undefined;
