import { OffboardedUsers } from '../auth/offboarded-users.js';
import { LeakReporterKeys } from '../auth/leak-reporter-keys.js';
import { readKeyGrant } from '../../common/apikey/index-reader.js';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { RequestHandler, Router } from 'express';
import type { Redis } from 'ioredis';
import type { EntryTrust } from '../auth/entry-trust.js';
import { TollgateError } from '../../common/errors.js';
import { DirApiKeyStore } from '../../common/apikey/dir-store.js';
import { KeyIndexWriter } from '../../common/apikey/index-writer.js';
import { KubeApiKeyStore } from '../../common/apikey/kube-store.js';
import type { RoleCatalogue } from '../../common/apikey/roles.js';
import type { ApiKeyStore } from '../../common/apikey/store.js';
import { dirIdentityStore, kubeIdentityStore, type IdentityStore } from '../../common/identity/store.js';
import { DeliveryQueue } from '../webhooks/deliveries.js';
import { WebhookDispatcher, type WebhookSettings } from '../webhooks/dispatcher.js';
import { DEFAULT_WEBHOOK_SETTINGS } from '../config/webhook-settings.js';
import { fromAudit } from '../webhooks/events.js';
import { WebhookInbox } from '../webhooks/inbox.js';
import { WebhookSender } from '../webhooks/sender.js';
import { AdminRights } from '../webhooks/admin-rights.js';
import { UsagePusher } from '../usage-export/pusher.js';
import type { UsageExportSettings } from '../usage-export/settings.js';
import { dirWebhookStore, kubeWebhookStore, type WebhookStore } from '../webhooks/store.js';

/** How long a webhook receiver has to answer one delivery. */
const WEBHOOK_TIMEOUT_MS = 10_000;
import type { Logger } from '../../common/logger.js';
import { ManifestDir } from '../../common/resources/manifest-dir.js';
import type { WorkflowRoutes } from '../../common/routes/workflow-routes.js';
import { LocalIssuer, localOidcConfig } from '../auth/local-issuer.js';
import { createTokenVerifier, type AdminPolicy, type OidcConfig } from '../auth/oidc.js';
import type { AuditLog } from '../audit/audit-log.js';
import { DirModelStore } from '../platform/models/dir-store.js';
import { KubeModelStore } from '../platform/models/kube-store.js';
import type { ModelStore } from '../platform/models/store.js';
import { createManagementRouter } from './router.js';
import type { ProxyTrust } from '../http/client-address.js';
import { NO_COUNT, type ShareRefused } from '../admission/shares.js';

/**
 * Builds the management API for one of the two deployments: on a cluster, keys are ApiKey
 * resources and users come from the configured OIDC provider; standalone, keys are manifests in the
 * state directory and users hold tokens from `tollgate token`, verified through the JWKS this
 * gateway serves (mount `jwks` at JWKS_PATH).
 */
export interface ManagementOptions {
  redis: Redis;
  /** The workflow route table, shared with the models resource (one per composition root). */
  workflows: WorkflowRoutes;
  log: Logger;
  roles: RoleCatalogue;
  audit: AuditLog;
  maxRollGraceSeconds: number;
  /** The most live keys a user who is not an administrator may make (config.ts says why). */
  maxKeysPerOwner?: number;
  /** Management calls one user may make of this replica a second (gateway/api/user-pace.ts). */
  managementCallsPerSecond?: number;
  keys: { kubeConfig: KubeConfig; namespace: string } | { stateDir: string };
  /** A real provider, or the local issuer of `stateDir`, verified through the gateway at `selfUrl`. */
  identity: { oidc: OidcConfig } | { local: { stateDir: string; selfUrl: string } };
  /** Who may act on every user's keys. */
  admin: AdminPolicy;
  /** Seals the index entries of the keys made here: the central gateway's signing key is needed. */
  trust: EntryTrust;
  /** Leaked-key reports: where the scanning service publishes its keys (unset: off), and what a true report does. */
  leakReports?: { keysUrl: string | undefined; action: 'revoke' | 'report' };
  /** Webhooks on key events: which inward networks and schemes they may use, and their schedule. */
  webhooks?: WebhookSettings;
  /** Usage for export (the pull API, webhook endpoints of usage.minute); undefined: off. */
  usageExport?: UsageExportSettings | undefined;
  /** Which proxies in front are believed about the client (unset: none). */
  proxies?: ProxyTrust;
  /** Counts refusals past a team's share: webhook sends, leak-report bytes (unset: not counted). */
  shareRefused?: ShareRefused;
}

export interface Management {
  /** Mount at `/api/v1`. */
  router: Router;
  /** Standalone only: the local issuer's JWKS, to mount at JWKS_PATH. */
  jwks?: RequestHandler;
  /** Stops the key store's watch and the webhook deliveries. */
  close(): Promise<void>;
}

export async function createManagement(opts: ManagementOptions): Promise<Management> {
  const { sealer } = opts.trust;
  if (sealer === undefined)
    throw new TollgateError(
      'invalid_config',
      'the management API writes the key index, which only the holder of the signing key may: set grantSigningKeyFile',
      { field: 'grantSigningKeyFile' },
    );
  const { store, identities, webhookStore, models } = openStores(opts);
  const { allowedCidrs, allowedHosts, allowHttp, ...schedule } = opts.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;
  const sender = new WebhookSender({ allowedCidrs, allowedHosts, allowHttp, timeoutMs: WEBHOOK_TIMEOUT_MS });
  // Kept a day past the last retry, and at least three days: long enough to see and replay.
  const retentionSeconds = Math.max(3 * 86_400, schedule.retrySeconds.reduce((a, b) => a + b, 0) + 86_400);
  const queue = new DeliveryQueue(opts.redis, Math.ceil(retentionSeconds));
  const admins = new AdminRights(opts.redis, opts.log.child({ component: 'webhooks' }));
  const dispatcher = new WebhookDispatcher(
    {
      admins,
      store: webhookStore,
      queue,
      sender,
      inbox: new WebhookInbox(opts.redis, () => undefined),
      sealer,
      redis: opts.redis,
      keys: store,
      shareRefused: opts.shareRefused ?? NO_COUNT,
      log: opts.log.child({ component: 'webhooks' }),
    },
    schedule,
  );
  opts.audit.subscribe((event) => {
    const forWebhooks = fromAudit(event);
    if (forWebhooks !== undefined) dispatcher.publish(forWebhooks);
  });
  dispatcher.start();
  const pusher =
    opts.usageExport === undefined
      ? undefined
      : new UsagePusher(
          {
            redis: opts.redis,
            store: webhookStore,
            queue,
            admins,
            sendNow: () => void dispatcher.poll(),
            source: opts.usageExport.source,
            log: opts.log.child({ component: 'usage-export' }),
          },
          schedule.pollMs,
        );
  pusher?.start();
  const issuer = 'local' in opts.identity ? await LocalIssuer.open(opts.identity.local.stateDir) : undefined;
  const oidc = 'local' in opts.identity ? localOidcConfig(opts.identity.local.selfUrl) : opts.identity.oidc;
  const offboarded = new OffboardedUsers(opts.redis, (oidc.clockToleranceSeconds ?? 30) * 1000);
  const router = createManagementRouter({
    store,
    identities,
    index: new KeyIndexWriter(opts.redis, sealer),
    redis: opts.redis,
    workflows: opts.workflows,
    roles: opts.roles,
    verifyToken: offboarded.guard(createTokenVerifier(oidc, opts.admin)),
    offboarded,
    admin: opts.admin,
    models,
    audit: opts.audit,
    maxRollGraceSeconds: opts.maxRollGraceSeconds,
    ...(opts.maxKeysPerOwner === undefined ? {} : { maxKeysPerOwner: opts.maxKeysPerOwner }),
    ...(opts.managementCallsPerSecond === undefined ? {} : { callsPerSecond: opts.managementCallsPerSecond }),
    leakReports: {
      keys:
        opts.leakReports?.keysUrl === undefined
          ? undefined
          : new LeakReporterKeys(opts.leakReports.keysUrl, opts.log),
      action: opts.leakReports?.action ?? 'revoke',
    },
    findGrant: (hash) => readKeyGrant(opts.redis, opts.trust.verifier, hash),
    sealer,
    webhooks: { store: webhookStore, queue, sender, dispatcher, admins },
    usageExport: opts.usageExport,
    ...(opts.proxies === undefined ? {} : { proxies: opts.proxies }),
    ...(opts.shareRefused === undefined ? {} : { shareRefused: opts.shareRefused }),
    log: opts.log,
  });
  const close = async () => {
    await pusher?.stop();
    await dispatcher.stop();
    await store.close();
  };
  return issuer === undefined ? { router, close } : { router, close, jwks: issuer.jwksHandler() };
}

/**
 * Where the management API keeps what it writes: ApiKeys, Identities and Webhooks, and the Models
 * the panel's Models page reads beside them: one namespace of the API server, or the state directory.
 */
function openStores(opts: ManagementOptions): {
  store: ApiKeyStore;
  identities: IdentityStore;
  webhookStore: WebhookStore;
  models: ModelStore;
} {
  if ('stateDir' in opts.keys) {
    const dir = new ManifestDir(opts.keys.stateDir, (file, err) =>
      opts.log.warn({ file, err }, 'invalid manifest ignored'),
    );
    return {
      store: new DirApiKeyStore(dir),
      identities: dirIdentityStore(dir),
      webhookStore: dirWebhookStore(dir),
      models: new DirModelStore(dir),
    };
  }
  const { kubeConfig, namespace } = opts.keys;
  return {
    store: watchedKeyStore(opts.keys, opts.log),
    identities: kubeIdentityStore(kubeConfig, namespace),
    webhookStore: kubeWebhookStore(kubeConfig, namespace),
    models: new KubeModelStore(kubeConfig.makeApiClient(CustomObjectsApi), namespace),
  };
}

/** The keys on the API server, their watch started at once: the first listing finds it warm. */
function watchedKeyStore(keys: { kubeConfig: KubeConfig; namespace: string }, log: Logger): KubeApiKeyStore {
  const store = new KubeApiKeyStore(keys.kubeConfig, keys.namespace, log);
  store.warm(log);
  return store;
}
