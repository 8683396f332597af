import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { parse as ParseYaml } from 'yaml';
import { TollgateError } from '../../common/errors.js';
import type { GatewayConfigInput } from '../config.js';
import { tracingFromEnv } from '../../common/tracing/settings.js';

/** Where settings come from besides flags: the environment, and a YAML/JSON file. */

/** Environment variable → config field. Upstreams come as `name=url,name=url`. */
export const GATEWAY_ENV: ReadonlyArray<readonly [string, keyof GatewayConfigInput]> = [
  ['TOLLGATE_HOST', 'host'],
  ['TOLLGATE_PORT', 'port'],
  ['TOLLGATE_GRPC_PORT', 'grpcPort'],
  ['TOLLGATE_EXT_AUTHZ_PORT', 'extAuthzPort'],
  ['TOLLGATE_MAX_CONNECTIONS', 'maxConnections'],
  ['TOLLGATE_GRPC_MAX_CONNECTIONS', 'grpcMaxConnections'],
  ['TOLLGATE_KEEP_ALIVE_PER_ADDRESS', 'keepAlivePerAddress'],
  ['TOLLGATE_CALLS_PER_ADDRESS', 'callsPerAddress'],
  ['TOLLGATE_CALLS_PER_OWNER', 'callsPerOwner'],
  ['TOLLGATE_MAX_ACTIVATION_WAIT_SECONDS', 'maxActivationWaitSeconds'],
  ['TOLLGATE_METRICS_PORT', 'metricsPort'],
  ['TOLLGATE_REDIS_URL', 'redisUrl'],
  ['TOLLGATE_BODY_LIMIT_BYTES', 'bodyLimitBytes'],
  ['TOLLGATE_HELD_BYTES_LIMIT', 'heldBytesLimit'],
  ['TOLLGATE_HEADER_LIMIT_BYTES', 'headerLimitBytes'],
  ['TOLLGATE_REQUEST_HEADERS_TIMEOUT_MS', 'requestHeadersTimeoutMs'],
  ['TOLLGATE_REQUEST_BODY_TIMEOUT_MS', 'requestBodyTimeoutMs'],
  ['TOLLGATE_CONNECT_TIMEOUT_MS', 'connectTimeoutMs'],
  ['TOLLGATE_UPSTREAM_TIMEOUT_MS', 'upstreamTimeoutMs'],
  ['TOLLGATE_UPSTREAM_CONNECTIONS', 'upstreamConnections'],
  ['TOLLGATE_SHUTDOWN_TIMEOUT_MS', 'shutdownTimeoutMs'],
  ['TOLLGATE_SHUTDOWN_DRAIN_MS', 'shutdownDrainMs'],
  ['TOLLGATE_USAGE_FLUSH_MS', 'usageFlushMs'],
  ['TOLLGATE_USAGE_SERIES', 'usageSeries'],
  ['TOLLGATE_USAGE_EXPORT', 'usageExport'],
  ['TOLLGATE_USAGE_EXPORT_RETENTION_DAYS', 'usageExportRetentionDays'],
  ['TOLLGATE_USAGE_EXPORT_SOURCE', 'usageExportSource'],
  ['TOLLGATE_CACHE_ENTRIES', 'cacheEntries'],
  ['TOLLGATE_REDIS_HEARTBEAT_MS', 'redisHeartbeatMs'],
  ['TOLLGATE_TRUSTED_PROXIES', 'trustedProxies'],
  ['TOLLGATE_TRUSTED_PROXY_CIDRS', 'trustedProxyCidrs'],
  ['TOLLGATE_MAX_ROLL_GRACE_SECONDS', 'maxRollGraceSeconds'],
  ['TOLLGATE_MANAGEMENT_CALLS_PER_SECOND', 'managementCallsPerSecond'],
  ['TOLLGATE_MAX_KEYS_PER_OWNER', 'maxKeysPerOwner'],
  ['TOLLGATE_AUDIT_URI', 'auditUri'],
  ['TOLLGATE_AUDIT_RETENTION_DAYS', 'auditRetentionDays'],
  ['TOLLGATE_AUDIT_FLUSH_MS', 'auditFlushMs'],
  ['TOLLGATE_AUDIT_REFUSAL_INTERVAL_MS', 'auditRefusalIntervalMs'],
  ['TOLLGATE_PAYLOAD_LOG_URI', 'payloadLogUri'],
  ['TOLLGATE_PAYLOAD_LOG_INTERVAL_MS', 'payloadLogIntervalMs'],
  ['TOLLGATE_PAYLOAD_LOG_BUFFER_BYTES', 'payloadLogBufferBytes'],
  ['TOLLGATE_PAYLOAD_LOG_MAX_BODY_BYTES', 'payloadLogMaxBodyBytes'],
  ['TOLLGATE_STATE_DIR', 'stateDir'],
  ['TOLLGATE_GRANT_SIGNING_KEY_FILE', 'grantSigningKeyFile'],
  ['TOLLGATE_TRUSTED_KEYS', 'trustedKeys'],
  ['TOLLGATE_REPORT_KEY', 'reportKey'],
  ['TOLLGATE_GROUPS_CLAIM', 'groupsClaim'],
  ['TOLLGATE_ADMIN_GROUPS', 'adminGroups'],
  ['TOLLGATE_LEAK_REPORT_KEYS_URL', 'leakReportKeysUrl'],
  ['TOLLGATE_LEAK_REPORT_ACTION', 'leakReportAction'],
  ['TOLLGATE_CREDIT_COSTS', 'creditCosts'],
  ['TOLLGATE_WEBHOOK_ALLOWED_CIDRS', 'webhookAllowedCidrs'],
  ['TOLLGATE_WEBHOOK_ALLOWED_HOSTS', 'webhookAllowedHosts'],
  ['TOLLGATE_WEBHOOK_ALLOW_HTTP', 'webhookAllowHttp'],
  ['TOLLGATE_WEBHOOK_RETRY_SECONDS', 'webhookRetrySeconds'],
  ['TOLLGATE_WEBHOOK_POLL_MS', 'webhookPollMs'],
  ['TOLLGATE_WEBHOOK_EXPIRING_SCAN_MS', 'webhookExpiringScanMs'],
  ['POD_NAMESPACE', 'namespace'],
  ['TOLLGATE_NAMESPACE', 'namespace'],
];

export const OIDC_ENV = [
  ['TOLLGATE_OIDC_ISSUER', 'issuer'],
  ['TOLLGATE_OIDC_AUDIENCE', 'audience'],
  ['TOLLGATE_OIDC_JWKS_URL', 'jwksUrl'],
  ['TOLLGATE_OIDC_CLIENT_ID', 'clientId'],
  ['TOLLGATE_OIDC_AUTHORIZED_PARTIES', 'authorizedParties'],
  ['TOLLGATE_OIDC_SCOPES', 'scopes'],
  ['TOLLGATE_OIDC_REDIRECT_PATH', 'redirectPath'],
  ['TOLLGATE_OIDC_CLOCK_TOLERANCE_SECONDS', 'clockToleranceSeconds'],
] as const;

/** Parses `datasets=http://a:1,services=http://b:2` into a map; the schema checks names and URLs. */
export function parseUpstreamList(list: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of list.split(',')) {
    const trimmed = item.trim();
    if (trimmed === '') continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) {
      throw new TollgateError('invalid_config', `upstream "${trimmed}" must be written resource=url`, {
        field: 'upstreams',
      });
    }
    out[trimmed.slice(0, eq)] = trimmed.slice(eq + 1);
  }
  return out;
}

/**
 * What Kubernetes writes into every container of a namespace for each of its Services (service
 * links): a Service named `tollgate-metrics` sets `TOLLGATE_METRICS_PORT=tcp://10.0.0.9:80` in
 * every pod there, sidecars included. A port is a number; a value of this form is not ours.
 */
const SERVICE_LINK = /^(tcp|udp|sctp):\/\//;

export function fromEnv(env: NodeJS.ProcessEnv): Partial<GatewayConfigInput> {
  const out: Record<string, unknown> = {};
  for (const [name, field] of GATEWAY_ENV) {
    const value = env[name];
    if (name.endsWith('_PORT') && value !== undefined && SERVICE_LINK.test(value)) continue;
    if (value !== undefined && value !== '') out[field] = value;
  }
  if (env.TOLLGATE_UPSTREAMS) out.upstreams = parseUpstreamList(env.TOLLGATE_UPSTREAMS);
  const tracing = tracingFromEnv(env);
  if (Object.keys(tracing).length > 0) out.tracing = tracing;
  const oidc = Object.fromEntries(
    OIDC_ENV.flatMap(([name, field]) => (env[name] ? [[field, env[name]]] : [])),
  );
  if (Object.keys(oidc).length > 0) out.oidc = oidc;
  return out as Partial<GatewayConfigInput>;
}

export function fromFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new TollgateError('invalid_config', `cannot read the gateway config file ${path}`, { cause });
  }
  // Required here, not imported: most processes (every sidecar) have no config file, and the
  // parser would be in their memory for nothing.
  const { parse } = createRequire(import.meta.url)('yaml') as { parse: typeof ParseYaml };
  const parsed: unknown = parse(text);
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new TollgateError('invalid_config', `${path} must hold a mapping of gateway settings`);
  }
  return parsed as Record<string, unknown>;
}
