import type { Redis } from 'ioredis';
import type { ApiKeyStore } from '../../../common/apikey/store.js';
import { createLogger } from '../../../common/logger.js';
import type { ManagementDeps } from '../../../gateway/api/deps.js';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../../gateway/config/webhook-settings.js';
import { DeliveryQueue } from '../../../gateway/webhooks/deliveries.js';
import { WebhookDispatcher } from '../../../gateway/webhooks/dispatcher.js';
import { AdminRights } from '../../../gateway/webhooks/admin-rights.js';
import { WebhookInbox } from '../../../gateway/webhooks/inbox.js';
import { WebhookSender } from '../../../gateway/webhooks/sender.js';
import type { WebhookStore } from '../../../gateway/webhooks/store.js';
import { testSealer } from '../signing.js';

/** The webhooks part of hand-built management deps: endpoints in `store`, deliveries not started. */
export async function webhookDeps(
  redis: Redis,
  store: WebhookStore,
  keys: ApiKeyStore,
): Promise<ManagementDeps['webhooks']> {
  const queue = new DeliveryQueue(redis, 3 * 86_400);
  const sender = new WebhookSender({ allowedCidrs: [], timeoutMs: 1_000 });
  const sealer = await testSealer();
  const admins = new AdminRights(redis, createLogger('webhooks', 'silent'));
  const dispatcher = new WebhookDispatcher(
    {
      admins,
      store,
      queue,
      sender,
      inbox: new WebhookInbox(redis, () => undefined),
      sealer,
      redis,
      keys,
      shareRefused: () => undefined,
      log: createLogger('webhooks', 'silent'),
    },
    DEFAULT_WEBHOOK_SETTINGS,
  );
  return { store, queue, sender, dispatcher, admins };
}
