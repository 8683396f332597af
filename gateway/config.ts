import { DEFAULT_MAX_KEYS_PER_OWNER } from '../common/apikey/store.js';
import { z } from 'zod';
import { roleDefinitionSchema } from '../common/apikey/roles.js';
import { TollgateError } from '../common/errors.js';
import { redisUrlSchema } from '../common/redis/connect.js';
import { cidrPrefix, isCidr } from '../common/net/cidr.js';
import { httpUrl, listOf, resourceName } from './config/fields.js';
import { fromEnv, fromFile } from './config/sources.js';
import { webhookConfigShape } from './config/webhook-settings.js';
import { tracingSettingsSchema } from '../common/tracing/settings.js';
import { isModelName } from '../common/resources/model-name.js';

/** A price in credits: a call's, or a row's. */
const CREDITS = z
  .int('a cost is a whole number of credits')
  .min(1, 'a cost is at least 1')
  .max(1000, 'a cost is at most 1000');

/**
 * Gateway configuration: defaults, then a YAML/JSON file (`TOLLGATE_CONFIG` or `--config`), then
 * environment variables, then command-line flags. Everything is validated here, once; the rest of
 * the gateway receives a typed `GatewayConfig` and never reads the environment itself.
 */
export const gatewayConfigSchema = z
  .strictObject({
    host: z.string().min(1).default('0.0.0.0'),
    /**
     * OpenTelemetry traces (OTLP over HTTP; docs/tracing.md), off unless an endpoint is given:
     * `endpoint` (OTEL_EXPORTER_OTLP_ENDPOINT, or TOLLGATE_TRACES_ENDPOINT), `tracesEndpoint`
     * (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), `protocol` (OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf
     * or http/json), `sampler` and `samplerArg` (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, or
     * TOLLGATE_TRACES_SAMPLE_RATIO), `serviceName` (OTEL_SERVICE_NAME), `disabled`
     * (OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER=none).
     */
    tracing: tracingSettingsSchema,
    port: z.coerce.number().int().min(0).max(65535).default(8080),
    /** Where the Open Inference Protocol's gRPC form is answered (gateway/grpc/); none when unset. */
    grpcPort: z.coerce.number().int().min(0).max(65535).optional(),
    /**
     * Where Envoy's ext_authz gRPC API (envoy.service.auth.v3.Authorization) is answered with
     * Tollgate's decision (gateway/forward-auth/); none when unset. Only the proxies that ask
     * should reach it: a NetworkPolicy, or a host it alone can reach.
     */
    extAuthzPort: z.coerce.number().int().min(0).max(65535).optional(),
    /**
     * Connections the traffic port keeps open at once. Anyone who reaches the port may open them,
     * so without a bound they alone could fill the memory. One client address (an IPv6 /64 as one)
     * holds at most a quarter; when the port is full, a newcomer takes the place of an idle
     * connection of whoever holds the most (gateway/http/connection-gate.ts).
     */
    maxConnections: z.coerce.number().int().min(16).default(16_384),
    /**
     * Connections one client address keeps open between calls: past it, each answer closes its
     * connection, so idle keep-alive slots cannot pile up behind one address. Trusted proxies
     * (trustedProxies) are not bounded: they carry everyone's calls.
     */
    keepAlivePerAddress: z.coerce.number().int().min(1).default(256),
    /**
     * Calls one client address has in flight on a replica at once (REST; behind trusted proxies the
     * address they forward). Past it: 429 too_many_calls with Retry-After.
     */
    callsPerAddress: z.coerce.number().int().min(1).default(1_024),
    /**
     * Calls the keys of one owner have in flight on a replica at once, REST and gRPC together, from
     * the key check to the answer (a call held while its model wakes, or to an upstream that never
     * answers, counts all along). Past it: 429 too_many_calls with Retry-After; other owners' calls
     * go on.
     */
    callsPerOwner: z.coerce.number().int().min(1).default(256),
    /**
     * The longest a call is held while its model wakes from zero, whatever the Model's own
     * spec.scaling.activationTimeoutSeconds says (a tenant sets that, up to 600 s).
     */
    maxActivationWaitSeconds: z.coerce.number().int().min(1).max(600).default(120),
    /**
     * The same for the gRPC port, where each connection is an HTTP/2 session (~25 KiB before any
     * call), and one client address may hold at most a quarter of them.
     */
    grpcMaxConnections: z.coerce.number().int().min(16).default(2_048),
    /**
     * Where `/metrics` is served (with `/healthz` and `/readyz`), apart from the traffic port, which
     * then answers `/metrics` with 404: model names and call volumes are not for whoever can send
     * a call. Unset (a gateway on loopback), the traffic port serves it.
     */
    metricsPort: z.coerce.number().int().min(0).max(65535).optional(),
    /** redis://, rediss:// (TLS), or redis+sentinel://s1,s2,s3/<primary> (common/redis/connect.ts). */
    redisUrl: redisUrlSchema.default('redis://127.0.0.1:6379'),
    /** Platform resource → upstream base URL; the upstream receives `/api/v1/<resource>[/...]` below it. */
    upstreams: z.record(resourceName, httpUrl).default({}),
    /** Platform roles added to (or replacing, by name) the default catalogue. */
    roles: z.array(roleDefinitionSchema).default([]),
    /** Largest request body passed upstream, in bytes (413 beyond it, checked while streaming). */
    bodyLimitBytes: z.coerce
      .number()
      .int()
      .positive()
      .default(10 * 1024 * 1024),
    /**
     * Bytes the calls of this process may hold at once (gateway/http/held-memory.ts): V2 bodies
     * being checked, gRPC messages and unread answers. Unset: 16 body limits. It must leave room in
     * the process's memory limit for them (decoding may take a few times their size); a sidecar's
     * is set by the webhook to fit the sidecar's limit.
     */
    heldBytesLimit: z.coerce.number().int().positive().optional(),
    /** Largest request head (request line + headers), in bytes; beyond it the answer is 431. */
    headerLimitBytes: z.coerce
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024)
      .default(16 * 1024),
    /**
     * Longest time to receive a request's head, and its whole body: a client trickling its body a
     * byte at a time would otherwise hold a connection and an upstream request open for as long as
     * it likes. Past either, the answer is 408 request_timeout and the connection is closed.
     */
    requestHeadersTimeoutMs: z.coerce.number().int().min(1_000).max(600_000).default(10_000),
    requestBodyTimeoutMs: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
    /** Time to connect to an upstream. */
    connectTimeoutMs: z.coerce.number().int().positive().default(5_000),
    /** Time for the upstream to send its response head, and the longest pause inside its body. */
    upstreamTimeoutMs: z.coerce.number().int().positive().default(60_000),
    /** Keep-alive connections per upstream origin. */
    upstreamConnections: z.coerce.number().int().positive().default(128),
    /** How long a graceful shutdown waits for in-flight requests before cutting them. */
    shutdownTimeoutMs: z.coerce.number().int().positive().default(30_000),
    /**
     * After SIGTERM, how long the gateway still serves, answering each request with
     * `Connection: close`, before it stops accepting: clients holding a keep-alive connection to it
     * (through a Service, still routed here by conntrack) move to another replica on their next
     * request instead of racing a closing socket.
     */
    shutdownDrainMs: z.coerce.number().int().nonnegative().default(3_000),
    /**
     * Usage over time (requests and refusals per minute and hour, top endpoints) besides the totals.
     * Off saves Redis memory on very many keys; `make bench` measures what it costs.
     */
    usageSeries: z
      .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')])
      .default(true),
    /** Usage figures (last used, request count) are batched and written this often. */
    usageFlushMs: z.coerce.number().int().positive().default(1_000),
    /**
     * A central gateway's usage for export (per key, identity, target and minute: calls, rows,
     * refusals by code, credits), read as CloudEvents from `GET /api/v1/admin/usage/export` and
     * sent to webhook endpoints that ask for `usage.minute` (docs/usage-export.md).
     */
    usageExport: z
      .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')])
      .default(true),
    /** Days the exported usage events are kept for the pull API and endpoints that were down. */
    usageExportRetentionDays: z.coerce
      .number()
      .int('usageExportRetentionDays is a whole number of days')
      .min(1, 'usageExportRetentionDays is at least 1')
      .max(90, 'usageExportRetentionDays is at most 90')
      .default(7),
    /**
     * The CloudEvents `source` of exported usage: with the event id, what a receiver dedupes by.
     * Give each installation its own (two Redis servers number their events alike).
     */
    usageExportSource: z
      .string()
      .min(1, 'usageExportSource is a URI reference such as /tollgate/eu-west')
      .max(255, 'usageExportSource is at most 255 characters')
      .regex(
        /^[\x21-\x7e]+$/,
        'usageExportSource is a URI reference without spaces, such as /tollgate/eu-west',
      )
      .default('/tollgate'),
    /**
     * Proxies in front of the gateway whose X-Forwarded-For entry is trusted (an ingress controller:
     * 1), each only when it connects from `trustedProxyCidrs`. The client address a key's network
     * allowlist and the audit trail see is the one that many trusted hops back; 0 takes the
     * connection's peer.
     */
    trustedProxies: z.coerce.number().int().min(0).max(10).default(0),
    /**
     * Where the trusted proxies connect from (the ingress controller's pod network, say). A caller
     * from anywhere else is its own address, whatever X-Forwarded-For it sends.
     */
    trustedProxyCidrs: listOf(
      z
        .string()
        .refine(isCidr, 'each entry is a CIDR such as 10.0.0.0/8 or fd00::/8')
        .refine(
          (c) => cidrPrefix(c) !== 0,
          'a /0 trusts every caller to name its own address: give the proxies’ own networks',
        ),
    ).default([]),
    /**
     * The most live keys one user may make through the API (administrators: no bound). Each key
     * is a resource every gateway replica and the operator hold in memory.
     */
    maxKeysPerOwner: z.coerce.number().int().min(1).max(1_000_000).default(DEFAULT_MAX_KEYS_PER_OWNER),
    /**
     * Management API calls one user may make of a replica each second, after a burst of ten
     * seconds' worth (gateway/api/user-pace.ts): some routes list every team's objects from the
     * Kubernetes API server.
     */
    managementCallsPerSecond: z.coerce.number().int().min(1).max(100_000).default(50),
    /** The longest grace period a rolled key may keep working for (`POST /apikeys/{id}/roll`). */
    maxRollGraceSeconds: z.coerce
      .number()
      .int()
      .min(0)
      .max(90 * 86_400)
      .default(7 * 86_400),
    /**
     * Where the audit trail of key events is kept: `file:///dir` or `s3://bucket/prefix` (S3
     * credentials from the AWS_* variables). Standalone defaults to `<stateDir>/audit`; unset on a
     * cluster, events only reach the log.
     */
    auditUri: z.string().min(1).optional(),
    auditRetentionDays: z.coerce.number().int().min(1).max(3650).default(90),
    auditFlushMs: z.coerce.number().int().positive().default(1_000),
    /**
     * Where models that set spec.logging have their calls logged: `file:///dir` or
     * `s3://bucket/prefix` (S3 credentials as for the audit trail). Standalone defaults to
     * `<stateDir>/payload-logs`; unset on a cluster, nothing is logged.
     */
    payloadLogUri: z.string().min(1).optional(),
    /** How often buffered payload records are written (one object per model and hour each time). */
    payloadLogIntervalMs: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
    /** Payload records held between writes; past this, new ones are dropped and counted. */
    payloadLogBufferBytes: z.coerce
      .number()
      .int()
      .min(1024)
      .default(16 * 1024 * 1024),
    /** A request or answer larger than this is logged as its size only. */
    payloadLogMaxBodyBytes: z.coerce
      .number()
      .int()
      .min(256)
      .default(64 * 1024),
    /** A key's refused uses are recorded at most once per this interval (the rest are counted). */
    auditRefusalIntervalMs: z.coerce.number().int().nonnegative().default(60_000),
    /**
     * How often the invalidation subscriber is pinged (and the index marker checked). A frozen Redis
     * lets cached keys pass for at most twice this; a flushed one is noticed within it.
     */
    redisHeartbeatMs: z.coerce.number().int().min(50).max(10_000).default(250),
    /** Entries in the in-process key and route caches. */
    cacheEntries: z.coerce.number().int().positive().default(10_000),
    /** Namespace of the ApiKey resources on a cluster (defaults to the pod's own). */
    namespace: z.string().min(1).default('default'),
    /**
     * The signing key (ES256 JWK; standalone: made on first use; on a cluster: the operator's Secret,
     * mounted): a central gateway seals the key index entries it writes with it and signs grants for
     * sidecars, and verifies sealed entries with its public half. A central gateway needs it.
     */
    grantSigningKeyFile: z.string().min(1).optional(),
    /**
     * A sidecar's trust: the JWKS of the signing key's public half (the webhook injects it). The
     * sidecar believes only Redis entries and grants signed by it, and can make neither.
     */
    trustedKeys: z.string().min(1).optional(),
    /**
     * A sidecar's load-report key, `<namespace>.<key>` (the webhook puts it in the namespace's
     * Secret): the autoscaler believes a sidecar's reports only for models of that namespace.
     */
    reportKey: z
      .string()
      .regex(
        /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\.[A-Za-z0-9_-]{43}$/,
        'reportKey is <namespace>.<43 base64url characters>',
      )
      .optional(),
    /** Where standalone mode keeps its manifests (ApiKey, Service, Model). */
    stateDir: z.string().min(1).default('.tollgate'),
    /**
     * The identity provider of the management API and the panel. Tokens are verified with the
     * provider's JWKS (`jwksUrl`, or the one its discovery document names). With `clientId` the
     * panel offers "Sign in": the authorization code flow with PKCE, run in the browser against
     * `issuer` for a public client (docs/panel.md).
     */
    oidc: z
      .strictObject({
        /** An https URL (a URN, e.g. a test issuer, needs jwksUrl and cannot offer "Sign in"). */
        issuer: z.string().min(1),
        audience: z.string().min(1),
        jwksUrl: httpUrl.optional(),
        clientId: z.string().min(1).max(255).optional(),
        /**
         * The clients whose tokens are taken (`azp`, or `client_id`/`cid`), when the audience is
         * one other applications' tokens also carry (Okta's `api://default`): a token a user's
         * sign-in gave another application is then refused here. Empty: any, as the audience says.
         */
        authorizedParties: listOf(z.string().min(1).max(255)).default([]),
        scopes: z
          .string()
          .regex(
            /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/,
            'scopes are separated by single spaces',
          )
          .refine((s) => s.split(' ').includes('openid'), 'scopes must include openid')
          .default('openid profile email groups'),
        /** Leeway for the token's expiry and not-before times, for clocks that drift apart. */
        clockToleranceSeconds: z.coerce.number().int().min(0).max(300).default(30),
        /** Where the provider sends the browser back: the panel's own address unless set. */
        redirectPath: z
          .string()
          // `//host` and `/\host` are read by browsers as another origin.
          .regex(
            /^\/(?![/\\])[^\s?#\\]*$/,
            'redirectPath is a path on this gateway such as /panel/ (not //host or /\\host)',
          )
          .optional(),
      })
      // Discovery, and the panel's sign-in, need the issuer to be where its documents are served.
      .refine((o) => o.jwksUrl !== undefined || httpUrl.safeParse(o.issuer).success, {
        message: 'set jwksUrl: an issuer that is not an http(s) URL publishes no discovery document',
        path: ['jwksUrl'],
      })
      .refine((o) => o.clientId === undefined || httpUrl.safeParse(o.issuer).success, {
        message: 'the panel signs in at the issuer, so with clientId the issuer must be an http(s) URL',
        path: ['issuer'],
      })
      .optional(),
    /** The token claim that lists the user's groups (Keycloak, Dex and Okta: groups; Entra ID: groups or roles). */
    groupsClaim: z.string().min(1).max(100).default('groups'),
    /**
     * Members of any of these groups are administrators: they may list, search and revoke every
     * user's keys, and offboard a user. Empty: nobody is.
     */
    /**
     * Leaked-key reports from a secret-scanning service (GitHub's partner program format): where
     * its public keys are published (`https://api.github.com/meta/public_keys/secret_scanning`
     * for GitHub). Unset: POST /api/v1/leaked-keys answers 404.
     */
    leakReportKeysUrl: z.url({ protocol: /^https?$/ }).optional(),
    /** revoke: a reported key that is real is revoked at once; report: only recorded and answered. */
    leakReportAction: z.enum(['revoke', 'report']).default('revoke'),
    ...webhookConfigShape,
    /**
     * What one call spends of a key's (or identity's) credits, where not 1, by platform resource
     * or model (`{datasets: 5, model-fraud: 20}`; a model's price is its inference's). A model's
     * inference may be priced per row of its batch instead: `{credits: 2, per: row}` (in the
     * environment `model-fraud=2/row`). Only this setting prices calls: a Model's spec is its
     * team's to write.
     */
    creditCosts: z
      .union([
        z.record(z.string(), z.unknown()),
        z.string().transform((list, ctx) => {
          const out: Record<string, unknown> = {};
          for (const item of list
            .split(',')
            .map((i) => i.trim())
            .filter((i) => i !== '')) {
            const eq = item.indexOf('=');
            if (eq <= 0) {
              ctx.addIssue({ code: 'custom', message: `"${item}" must be written resource=cost` });
              return z.NEVER;
            }
            const value = item.slice(eq + 1).trim();
            const perRow = /^(.*)\/\s*row$/.exec(value);
            out[item.slice(0, eq).trim()] =
              perRow === null ? Number(value) : { credits: Number((perRow[1] ?? '').trim()), per: 'row' };
          }
          return out;
        }),
      ])
      .pipe(
        z
          .record(
            z
              .string()
              .regex(/^[a-z][a-z0-9-]{0,62}$/, 'a priced name is a platform resource or a model name'),
            z.preprocess(
              (price) => (typeof price === 'number' ? { credits: price } : price),
              z.strictObject(
                {
                  credits: CREDITS,
                  per: z.enum(['call', 'row'], { error: 'a price is per call or per row' }).default('call'),
                },
                { error: 'a price is a whole number of credits, or {credits, per: call or row}' },
              ),
            ),
          )
          .superRefine((costs, ctx) => {
            for (const [name, price] of Object.entries(costs)) {
              if (price.per === 'row' && !isModelName(name))
                ctx.addIssue({
                  code: 'custom',
                  path: [name],
                  message: `only a model's inference is priced per row of its batch, and "${name}" is no model name (model-<id>); price it per call`,
                });
            }
          }),
      )
      .default({}),
    adminGroups: listOf(z.string().min(1).max(255)).default([]),
  })
  .refine((c) => c.heldBytesLimit === undefined || c.heldBytesLimit >= c.bodyLimitBytes, {
    path: ['heldBytesLimit'],
    error: 'heldBytesLimit must hold at least one body of bodyLimitBytes: raise it, or lower bodyLimitBytes',
  })
  .refine((c) => c.trustedProxies === 0 || c.trustedProxyCidrs.length > 0, {
    path: ['trustedProxyCidrs'],
    error:
      'trustedProxies believes X-Forwarded-For only from proxies at known addresses: list their networks in trustedProxyCidrs',
  });

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type GatewayConfigInput = z.input<typeof gatewayConfigSchema>;

/**
 * Builds the config. `overrides` are command-line flags; upstreams and tracing from every layer
 * are merged (a flag adds or replaces one resource, it does not drop the file's others).
 */
export function loadGatewayConfig(
  opts: { env?: NodeJS.ProcessEnv; file?: string; overrides?: Partial<GatewayConfigInput> } = {},
): GatewayConfig {
  const env = opts.env ?? process.env;
  const file = opts.file ?? env.TOLLGATE_CONFIG;
  const layers = [file === undefined ? {} : fromFile(file), fromEnv(env), opts.overrides ?? {}];
  const merged: Record<string, unknown> = {};
  // Merged field by field: OTEL_SERVICE_NAME in the environment keeps the file's tracing endpoint.
  const upstreams: Record<string, unknown> = {};
  const tracing: Record<string, unknown> = {};
  for (const layer of layers) {
    for (const [k, v] of Object.entries(layer)) {
      if (v === undefined) continue;
      if (k === 'upstreams' && typeof v === 'object' && v !== null) Object.assign(upstreams, v);
      else if (k === 'tracing' && typeof v === 'object' && v !== null) Object.assign(tracing, v);
      else merged[k] = v;
    }
  }
  merged.upstreams = upstreams;
  merged.tracing = tracing;
  const result = gatewayConfigSchema.safeParse(merged);
  if (!result.success) {
    const issue = result.error.issues[0];
    const field = issue?.path.join('.') ?? '';
    throw new TollgateError(
      'invalid_config',
      `gateway setting ${field || '(root)'}: ${issue?.message ?? 'invalid'}`,
      {
        field,
      },
    );
  }
  return result.data;
}
