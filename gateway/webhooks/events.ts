import type { LimitNotice } from '../auth/limit-notices.js';
import type { AuditEvent } from '../audit/audit-event.js';
import type { WebhookEventType } from '../../common/resources/webhook.js';
import { USAGE_BATCH_CONTENT_TYPE, USAGE_WEBHOOK_EVENT } from '../usage-export/cloud-events.js';

/** One key event for the endpoints that asked for it: whose it is, and what they are told. */
export interface WebhookEvent {
  type: WebhookEventType;
  /** The user whose key (or identity) it is: their endpoints, and administrators', receive it. */
  owner: string;
  data: WebhookEventData;
}

/** What an endpoint is told: never a key, only its id, name and first characters. */
export interface WebhookEventData {
  keyId?: string;
  keyName?: string;
  keyStart?: string;
  identity?: string;
  owner: string;
  actor?: string;
  detail?: Record<string, string | number>;
}

/**
 * How a message of `type` is sent: usage as a batch of CloudEvents (gateway/usage-export/pusher.ts),
 * the key events as Standard Webhooks' `{type, timestamp, data}`.
 */
export function contentTypeOf(type: string): string {
  return type === USAGE_WEBHOOK_EVENT ? USAGE_BATCH_CONTENT_TYPE : 'application/json';
}

/** The management actions endpoints hear of, from the audit trail that records every one. */
export function fromAudit(e: AuditEvent): WebhookEvent | undefined {
  const type = auditType(e);
  if (type === undefined) return undefined;
  const data: WebhookEventData = { owner: e.owner, actor: e.actor };
  if (e.keyId !== undefined) data.keyId = e.keyId;
  if (e.keyName !== undefined) data.keyName = e.keyName;
  if (e.keyStart !== undefined) data.keyStart = e.keyStart;
  if (e.identity !== undefined) data.identity = e.identity;
  if (e.detail !== undefined) data.detail = e.detail;
  return { type, owner: e.owner, data };
}

function auditType(e: AuditEvent): WebhookEventType | undefined {
  switch (e.action) {
    case 'key.created':
      return 'key.created';
    case 'key.rolled':
      return 'key.rolled';
    case 'key.deleted':
      return e.detail?.['reason'] === 'user offboarded' ? 'key.offboarded' : 'key.revoked';
    case 'key.leaked':
      return 'key.leaked';
    default:
      return undefined;
  }
}

/** The rate limiter's notice (a limit breached, credits low or spent) as an event for the key's owner. */
export function noticeEvent(n: LimitNotice): WebhookEvent {
  const { grant } = n;
  const data: WebhookEventData = { keyId: grant.id, owner: grant.owner, detail: n.detail };
  if (grant.name !== undefined) data.keyName = grant.name;
  const identity = n.identity ?? grant.identity?.name;
  if (identity !== undefined) data.identity = identity;
  return { type: n.type, owner: grant.owner, data };
}

/**
 * A breached limit is told at most once a minute per key and limit. Credits low and spent are
 * raised once each when every call costs alike, but calls of mixed prices can cross a mark twice:
 * each is told at most once an hour per budget.
 */
export function noticeOnce(n: LimitNotice): { key: string; seconds: number } {
  if (n.type === 'key.rate_limited')
    return { key: `rl:${n.grant.id}:${n.identity ?? ''}:${String(n.detail['limit'])}`, seconds: 60 };
  const budget = n.identity ?? n.grant.countsAs ?? n.grant.id;
  return { key: `${n.type}:${budget}:${String(n.detail['refillsAt'] ?? 'all')}`, seconds: 3600 };
}
