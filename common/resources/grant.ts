import { z } from 'zod';
import { routeCohortSchema } from './cohort.js';

/**
 * The two values Tollgate keeps in Redis (see common/redis/schema.ts for where and who writes
 * them): what a key grants, and where a route goes. Each is one zod schema; the TypeScript types
 * are inferred from it, and every reader parses with `parseStored`, so a writer and a reader can
 * never disagree on a shape.
 */
export type Module = 'bda' | 'platform';
export const MODULES: readonly Module[] = ['bda', 'platform'];

export const rateLimitSchema = z.object({
  /** Requests allowed per window. */
  requests: z.number().int().positive(),
  windowSeconds: z.number().int().positive(),
});
export type RateLimit = z.infer<typeof rateLimitSchema>;

/** A rate limit with a name, which the 429 it causes says (a burst per second, a quota per day). */
export const namedLimitSchema = rateLimitSchema.extend({ name: z.string().min(1) });
export type NamedLimit = z.infer<typeof namedLimitSchema>;

const creditsSchema = z.object({
  amount: z.number().int().min(0),
  refill: z.enum(['daily', 'monthly']).optional(),
});

/**
 * The identity a key belongs to, as its index entry carries it: the identity's own limits and
 * credits, counted across all its keys. `missing`: the key names an identity that does not exist,
 * and is refused.
 */
export const identityGrantSchema = z.object({
  name: z.string().min(1),
  /**
   * Where its counters are (`@` and a keyed digest of its name, rate-limit.ts): not guessable from
   * the name, so a team holding a sidecar's Redis password (which may increment counters) cannot
   * fill another customer's windows; the same across the identity's re-creation by its owner, so
   * deleting and making it again resets no quota (another owner's identity of a freed name starts
   * with nothing spent: credits.ts, takeIdentityCounters).
   */
  account: z.string().regex(/^@[0-9a-f]{24}$/),
  limits: z.array(namedLimitSchema).optional(),
  credits: creditsSchema.optional(),
  missing: z.literal(true).optional(),
});
export type IdentityGrant = z.infer<typeof identityGrantSchema>;

/** What a key grants, as stored in the Redis key index and sent upstream (never the key). */
export const keyGrantSchema = z.object({
  /** The ApiKey resource's id (not secret). */
  id: z.string().min(1),
  owner: z.string(),
  module: z.enum(['bda', 'platform']),
  roles: z.array(z.string()),
  name: z.string().optional(),
  /** ISO 8601; absent means the key does not expire. */
  expiresAt: z.string().optional(),
  rateLimit: rateLimitSchema.optional(),
  /**
   * Set for a key made by a roll: the id whose counters it shares (the roll chain's first key), so
   * rolling resets no rate-limit window and no credits. Absent: the key's own id.
   */
  countsAs: z.string().min(1).optional(),
  /** Calls the key may make (in all, or each UTC day or month with refill); one spent per admitted call. */
  credits: creditsSchema.optional(),
  /** Named limits besides `rateLimit`; a call must fit them all. */
  limits: z.array(namedLimitSchema).optional(),
  /** The identity whose limits and credits the key shares with its other keys. */
  identity: identityGrantSchema.optional(),
  /** Client networks the key may be used from; absent means anywhere. */
  allowedCidrs: z.array(z.string()).optional(),
  /** The models a platform key may call: names or `*` patterns (common/apikey/model-scope.ts). */
  models: z.array(z.string()).optional(),
  /** The key was rolled to this key id: `expiresAt` is the end of its grace period. */
  rolledTo: z.string().optional(),
});
export type KeyGrant = z.infer<typeof keyGrantSchema>;

/** The longest probe URL a starting replica may have, encoded: every gateway reads the route. */
export const MAX_PROBE_URL = 1_024;

/** A starting replica: both addresses are its pod's (operator/serving/starting-replicas.ts). */
const startingSchema = z
  .array(
    z.object({
      // An address and a port.
      url: z.url({ protocol: /^http$/ }).max(64),
      probe: z.url({ protocol: /^http$/ }).max(MAX_PROBE_URL),
      /** Epoch ms: past it the replica is not followed (its address may be another pod's by then). */
      until: z.int().positive(),
    }),
  )
  .max(4);

/**
 * A Model uid as its records' keys and prefixes may hold it: the API server's (a UUID), or a
 * standalone manifest's (`manifest-<name>`, or what its author wrote). Never a `/`, never a dot
 * segment: it is one segment of a Redis key and of an object store prefix.
 */
export const MODEL_UID = /^[0-9A-Za-z][0-9A-Za-z._-]{0,127}$/;

/** A route-table entry: where the gateway sends a workflow service's or a model's traffic. */
export const routeSchema = z.object({
  /** Base URL of the upstream, e.g. http://svc.ns.svc:8080 */
  url: z.url({ protocol: /^https?$/ }),
  /** The owner its Workflow record names, for a bda route and a model route with a `workflow`. */
  owner: z.string().optional(),
  workflow: z.string().optional(),
  /**
   * The service answers through a Tollgate sidecar that takes grants for this audience (see
   * `grantAudience`): the central gateway signs each call's grant for it (X-Tollgate-Grant), so
   * the sidecar need not look the key up again.
   */
  grantAudience: z.string().min(1).optional(),
  /**
   * What created the route: `service/<ns>/<name>`, `model/<ns>/<name>` (modelRouteSource),
   * `manifest`. A model's sidecar believes a route only for its own namespace's Model.
   */
  source: z.string().optional(),
  /**
   * A model route's Model uid (metadata.uid): its own records (calls per minute, shadow and
   * version figures, payload log) are kept under it, so a Model made again under a name, even in
   * the same namespace, starts clean rather than with an earlier one's.
   */
  uid: z.string().regex(MODEL_UID).optional(),
  /**
   * A model with versions: each ready version, with the percentage of unversioned inference calls
   * it takes (`url` is the one the unversioned metadata and readiness paths answer from).
   */
  versions: z
    .array(
      z.object({
        name: z.string().min(1),
        url: z.url({ protocol: /^https?$/ }),
        percent: z.int().min(0).max(100),
        /** Every unversioned inference call of these callers goes to it (the first that has them). */
        cohort: routeCohortSchema.optional(),
        cold: z.boolean().optional(),
        starting: startingSchema.optional(),
      }),
    )
    .optional(),
  /**
   * Shadow traffic (spec.shadow): a ready version that gets a copy of `percent` of the answered
   * inference calls; its answers are compared and logged, never returned.
   */
  shadow: z
    .object({
      name: z.string().min(1),
      url: z.url({ protocol: /^https?$/ }),
      percent: z.int().min(1).max(100),
      /** Only these callers' calls are copied. */
      cohort: routeCohortSchema.optional(),
      /** Scaled to zero: copies are dropped while a call asks the operator to wake it. */
      cold: z.boolean().optional(),
    })
    .optional(),
  /**
   * No replica is ready because the autoscaler scaled the model (or this version) to zero: a call
   * waits at the gateway while one starts, instead of being refused.
   */
  cold: z.boolean().optional(),
  /**
   * With `cold`: the replicas starting, each where it serves and the readiness probe its pod
   * declares. While it holds calls the gateway asks those probes itself, often, and sends the calls
   * to the first replica that answers ready, before the kubelet, the Deployment and this route have
   * caught up (operator/serving/starting-replicas.ts).
   */
  starting: startingSchema.optional(),
  /** With `cold`: how long a held call waits for a replica (spec.scaling.activationTimeoutSeconds). */
  activationTimeoutSeconds: z.int().min(1).max(600).optional(),
  /** A model's payload logging (spec.logging): the share of calls logged, the fields redacted. */
  logging: z
    .object({
      sampleRate: z.number().min(0).max(1),
      redact: z.array(z.string().min(1).max(128)).max(32).optional(),
    })
    .optional(),
});
export type Route = z.infer<typeof routeSchema>;

/**
 * Who a signed grant is for: one sidecar's workload, in its namespace. A workflow service's sidecar
 * takes grants for its workflow and service, a model's sidecar for its model; neither takes the
 * other's, and a sidecar in another namespace (the webhook tells each its own, from the pod's
 * metadata) takes neither.
 */
export const grantAudience = {
  service: (namespace: string, workflow: string, service: string): string =>
    `urn:tollgate:service:${namespace}/${workflow}/${service}`,
  model: (namespace: string, model: string): string => `urn:tollgate:model:${namespace}/${model}`,
} as const;

/**
 * A stored JSON value checked against its schema: the value, or the first issue when the entry is
 * not JSON or not of that shape (a corrupt entry must grant and route nothing).
 */
export function parseStored<S extends z.ZodType>(
  schema: S,
  raw: string,
): { ok: true; value: z.output<S> } | { ok: false; issue: string } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { ok: false, issue: 'not JSON' };
  }
  const parsed = schema.safeParse(json);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : { ok: false, issue: parsed.error.issues[0]?.message ?? 'invalid' };
}

/**
 * The team a route's calls belong to, for the shares of what a replica holds for them (payload
 * log, shadow copies): the namespace of the resource the operator made it from; "" for a route
 * of no namespace (standalone manifests). The operator writes the source, never a tenant.
 */
export const teamOfSource = (source: string | undefined): string =>
  /^(?:model|service)\/([^/]+)\//.exec(source ?? '')?.[1] ?? '';

/**
 * What a Model's own records (its calls per minute, its shadow's, its versions' figures) are kept
 * under: its namespace, name and uid, so a name taken again after it was given up (by another team
 * or by the same one) starts clean rather than with the last holder's figures. "" namespace: a
 * route of no namespace, by name; no uid (standalone manifests): by namespace and name.
 */
export const modelAccount = (namespace: string, name: string, uid?: string): string =>
  `${namespace === '' ? name : `${namespace}/${name}`}${uid === undefined || uid === '' ? '' : `/${uid}`}`;

/** The `source` of the routes the operator writes for a Model. */
export const modelRouteSource = (namespace: string, name: string): string => `model/${namespace}/${name}`;
