import type { ManagementRoute } from '../route.js';
import { adminDeleteKeyRoute } from './admin-delete-key.js';
import { adminListKeysRoute } from './admin-list-keys.js';
import { adminAddCreditsRoute } from './admin-add-credits.js';
import { adminSetLimitsRoute } from './admin-set-limits.js';
import { adminImportKeysRoute } from './admin-import-keys.js';
import { createKeyRoute } from './create-key.js';
import { deleteKeyRoute } from './delete-key.js';
import { getKeyRoute } from './get-key.js';
import { keyUsageRoute } from './key-usage.js';
import { listAuditRoute } from './list-audit.js';
import { listKeysRoute } from './list-keys.js';
import { listModelsRoute } from './list-models.js';
import { listModulesRoute } from './list-modules.js';
import { offboardRoute } from './offboard.js';
import { rollKeyRoute } from './roll-key.js';
import { reportLeakedKeysRoute } from './report-leaked-keys.js';
import { whoamiRoute } from './whoami.js';
import { createIdentityRoute } from './create-identity.js';
import { listIdentitiesRoute } from './list-identities.js';
import { getIdentityRoute } from './get-identity.js';
import { deleteIdentityRoute } from './delete-identity.js';
import { adminSetIdentityLimitsRoute } from './admin-set-identity-limits.js';
import { adminAddIdentityCreditsRoute } from './admin-add-identity-credits.js';
import { adminUsageExportRoute } from './admin-usage-export.js';
import { createWebhookRoute } from './create-webhook.js';
import { listWebhooksRoute } from './list-webhooks.js';
import { deleteWebhookRoute } from './delete-webhook.js';
import { rotateWebhookSecretRoute } from './rotate-webhook-secret.js';
import { listWebhookDeliveriesRoute } from './list-webhook-deliveries.js';
import { replayWebhookDeliveryRoute } from './replay-webhook-delivery.js';

/**
 * Every management route, in the order the OpenAPI document lists them. The router mounts them and
 * the document describes them from this list alone (a test checks every file here is in it).
 */
export const managementRoutes: readonly ManagementRoute[] = [
  listKeysRoute,
  createKeyRoute,
  getKeyRoute,
  deleteKeyRoute,
  rollKeyRoute,
  keyUsageRoute,
  listIdentitiesRoute,
  createIdentityRoute,
  getIdentityRoute,
  deleteIdentityRoute,
  listWebhooksRoute,
  createWebhookRoute,
  deleteWebhookRoute,
  rotateWebhookSecretRoute,
  listWebhookDeliveriesRoute,
  replayWebhookDeliveryRoute,
  listAuditRoute,
  listModulesRoute,
  listModelsRoute,
  whoamiRoute,
  adminListKeysRoute,
  // Before /admin/apikeys/{id}: "import" is no key id.
  adminImportKeysRoute,
  adminDeleteKeyRoute,
  adminSetLimitsRoute,
  adminAddCreditsRoute,
  adminSetIdentityLimitsRoute,
  adminAddIdentityCreditsRoute,
  adminUsageExportRoute,
  offboardRoute,
  reportLeakedKeysRoute,
];
