import type { AdminRights } from '../webhooks/admin-rights.js';
import type { Redis } from 'ioredis';
import type { KeyIndexWriter } from '../../common/apikey/index-writer.js';
import type { RoleCatalogue } from '../../common/apikey/roles.js';
import type { ApiKeyStore } from '../../common/apikey/store.js';
import type { IdentityStore } from '../../common/identity/store.js';
import type { Logger } from '../../common/logger.js';
import type { WorkflowRoutes } from '../../common/routes/workflow-routes.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { ModelStore } from '../platform/models/store.js';
import type { AdminPolicy, TokenVerifier } from '../auth/oidc.js';
import type { OffboardedUsers } from '../auth/offboarded-users.js';
import type { LeakReporterKeys } from '../auth/leak-reporter-keys.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import type { EntrySealer } from '../../common/redis/sealed-entry.js';
import type { DeliveryQueue } from '../webhooks/deliveries.js';
import type { WebhookDispatcher } from '../webhooks/dispatcher.js';
import type { WebhookSender } from '../webhooks/sender.js';
import type { WebhookStore } from '../webhooks/store.js';
import type { ProxyTrust } from '../http/client-address.js';
import type { ShareRefused } from '../admission/shares.js';
import type { UsageExportSettings } from '../usage-export/settings.js';

/** What the management API is built from; the gateway builds each once and injects it. */
export interface ManagementDeps {
  store: ApiKeyStore;
  /** Seals index entries, and derives what the signing key's holders share (identities' counter accounts, webhook secrets). */
  sealer: EntrySealer;
  /** Identities: whom several keys belong to, with limits and credits across them. */
  identities: IdentityStore;
  index: KeyIndexWriter;
  /** Read for usage figures (last used, request count). */
  redis: Redis;
  workflows: WorkflowRoutes;
  roles: RoleCatalogue;
  /** Verifies a bearer token (and refuses one its user held when offboarded). */
  verifyToken: TokenVerifier;
  /** Users offboarded: checked again after a key is made, so a call racing an offboarding loses. */
  offboarded: OffboardedUsers;
  /** The Models the panel's Models page lists (read only). */
  models: ModelStore;
  /** Who is an administrator (the admin routes check it; errors name the claim). */
  admin: AdminPolicy;
  /** Every key event is recorded here; `GET /audit` reads it. */
  audit: AuditLog;
  /** Leaked-key reports: the scanning service's keys (undefined: reports are off), and what a true one does. */
  leakReports: { keys: LeakReporterKeys | undefined; action: 'revoke' | 'report' };
  /** The grant of a key by its hash, as the index holds it. */
  findGrant(hash: string): Promise<KeyGrant | undefined>;
  /** Webhooks on key events: the endpoints, their deliveries, and how to reach and sign for them. */
  webhooks: {
    store: WebhookStore;
    queue: DeliveryQueue;
    sender: WebhookSender;
    dispatcher: WebhookDispatcher;
    /** Each caller's administrator standing, noted for allOwners endpoints (webhooks/admin-rights.ts). */
    admins: Pick<AdminRights, 'note'>;
  };
  /** Usage for export: its CloudEvents source; undefined where the export is off (the pull API answers 404). */
  usageExport?: UsageExportSettings | undefined;
  /** The longest grace period a roll may give the old key. */
  maxRollGraceSeconds: number;
  /** The most live keys a user who is not an administrator may make (default DEFAULT_MAX_KEYS_PER_OWNER). */
  maxKeysPerOwner?: number;
  /** Management calls one user may make of this replica a second (default 50; user-pace.ts). */
  callsPerSecond?: number;
  /** Which proxies in front are believed about the client (default: none). */
  proxies?: ProxyTrust;
  /** Counts a refusal past a team's share, here a sender's leak-report bytes (default: not counted). */
  shareRefused?: ShareRefused;
  log: Logger;
}
