import type { KubeConfig } from '@kubernetes/client-node';
import { TollgateError } from '../../common/errors.js';
import type { ManifestDir } from '../../common/resources/manifest-dir.js';
import {
  WEBHOOK_GROUP,
  WEBHOOK_PLURAL,
  WEBHOOK_VERSION,
  webhookSchema,
  type Webhook,
} from '../../common/resources/webhook.js';
import { DirResourceStore } from '../../common/stores/dir-resource-store.js';
import { KubeResourceStore } from '../../common/stores/kube-resource-store.js';
import type { ResourceKind, ResourceStore } from '../../common/stores/resource-store.js';

/** Where Webhook resources live: beside the keys (their namespace, or the state directory). */
export type WebhookStore = ResourceStore<Webhook>;

const WEBHOOK: ResourceKind = {
  kind: 'Webhook',
  crdFile: 'crds/webhooks.yaml',
  exists: (name) => new TollgateError('webhook_changed', `webhook ${name} exists already; retry`),
  changed: (name) =>
    new TollgateError(
      'webhook_changed',
      `webhook ${name} was changed or deleted meanwhile; read it again and retry`,
    ),
};

export const kubeWebhookStore = (kc: KubeConfig, namespace: string): WebhookStore =>
  new KubeResourceStore(
    kc,
    { group: WEBHOOK_GROUP, version: WEBHOOK_VERSION, namespace, plural: WEBHOOK_PLURAL },
    webhookSchema,
    WEBHOOK,
  );

export const dirWebhookStore = (dir: ManifestDir): WebhookStore =>
  new DirResourceStore(dir, WEBHOOK_PLURAL, webhookSchema, WEBHOOK);
