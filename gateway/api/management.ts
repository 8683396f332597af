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
import { DirIdentityStore } from '../../common/identity/dir-store.js';
import { KubeIdentityStore } from '../../common/identity/kube-store.js';
import type { IdentityStore } from '../../common/identity/store.js';
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
  keys: { kubeConfig: KubeConfig; namespace: string } | { stateDir: string };
  /** A real provider, or the local issuer of `stateDir`, verified through the gateway at `selfUrl`. */
  identity: { oidc: OidcConfig } | { local: { stateDir: string; selfUrl: string } };
  /** Who may act on every user's keys. */
  admin: AdminPolicy;
  /** Seals the index entries of the keys made here: the central gateway's signing key is needed. */
  trust: EntryTrust;
  /** Leaked-key reports: where the scanning service publishes its keys (unset: off), and what a true report does. */
  leakReports?: { keysUrl: string | undefined; action: 'revoke' | 'report' };
}

export interface Management {
  /** Mount at `/api/v1`. */
  router: Router;
  /** Standalone only: the local issuer's JWKS, to mount at JWKS_PATH. */
  jwks?: RequestHandler;
  /** Stops the key store's watch. */
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
  const store: ApiKeyStore =
    'stateDir' in opts.keys
      ? new DirApiKeyStore(
          new ManifestDir(opts.keys.stateDir, (file, err) =>
            opts.log.warn({ file, err }, 'invalid manifest ignored'),
          ),
        )
      : watchedKeyStore(opts.keys, opts.log);
  const identities: IdentityStore =
    'stateDir' in opts.keys
      ? new DirIdentityStore(
          new ManifestDir(opts.keys.stateDir, (file, err) =>
            opts.log.warn({ file, err }, 'invalid manifest ignored'),
          ),
        )
      : new KubeIdentityStore(opts.keys.kubeConfig, opts.keys.namespace);
  // The Models page reads the Models beside the keys: the same namespace, or the same directory.
  const models: ModelStore =
    'stateDir' in opts.keys
      ? new DirModelStore(new ManifestDir(opts.keys.stateDir, () => undefined))
      : new KubeModelStore(opts.keys.kubeConfig.makeApiClient(CustomObjectsApi), opts.keys.namespace);
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
    leakReports: {
      keys:
        opts.leakReports?.keysUrl === undefined
          ? undefined
          : new LeakReporterKeys(opts.leakReports.keysUrl, opts.log),
      action: opts.leakReports?.action ?? 'revoke',
    },
    findGrant: (hash) => readKeyGrant(opts.redis, opts.trust.verifier, hash),
    log: opts.log,
  });
  const close = () => store.close();
  return issuer === undefined ? { router, close } : { router, close, jwks: issuer.jwksHandler() };
}

/** The keys on the API server, their watch started at once: the first listing finds it warm. */
function watchedKeyStore(keys: { kubeConfig: KubeConfig; namespace: string }, log: Logger): KubeApiKeyStore {
  const store = new KubeApiKeyStore(keys.kubeConfig, keys.namespace, log);
  store.warm(log);
  return store;
}
