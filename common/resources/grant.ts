/** What a key grants, as stored in the Redis key index and sent upstream (never the key). */
export type Module = 'bda' | 'platform';
export const MODULES: readonly Module[] = ['bda', 'platform'];

export interface RateLimit {
  /** Requests allowed per window. */
  requests: number;
  windowSeconds: number;
}

export interface KeyGrant {
  /** The ApiKey resource's id (not secret). */
  id: string;
  owner: string;
  module: Module;
  roles: string[];
  name?: string;
  /** ISO 8601; absent means the key does not expire. */
  expiresAt?: string;
  rateLimit?: RateLimit;
}

/** A route-table entry: where the gateway sends a workflow service's or a model's traffic. */
export interface Route {
  /** Base URL of the upstream, e.g. http://svc.ns.svc:8080 */
  url: string;
  /** For bda routes: the workflow's owner; for model routes: the model's workflow, if any. */
  owner?: string;
  workflow?: string;
  /** What created the route, for debugging: `service/<ns>/<name>`, `model/<ns>/<name>`, `manifest`. */
  source?: string;
}
