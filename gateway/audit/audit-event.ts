import { z } from 'zod';
import type { CallHead } from '../http/call-head.js';

export const AUDIT_ACTIONS = [
  'key.created',
  'key.rolled',
  'key.deleted',
  'key.expired',
  'key.refused',
  'key.limits_changed',
  'key.leaked',
  'key.credits_added',
  'identity.created',
  'identity.deleted',
  'identity.limits_changed',
  'identity.credits_added',
  'webhook.created',
  'webhook.deleted',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** One line of a segment: what happened to which key, who did it, when, from where. Never a key. */
export const auditEventSchema = z.object({
  id: z.string(),
  at: z.string().refine((at) => !Number.isNaN(Date.parse(at)), 'not a date-time'),
  action: z.enum(AUDIT_ACTIONS),
  /** The key's id; absent for an identity's own events. */
  keyId: z.string().optional(),
  /** The identity the event is about (identity.*), or the identity of the key it is about. */
  identity: z.string().optional(),
  /** The key's name and first characters when it happened, so a reader knows which key it was. */
  keyName: z.string().optional(),
  keyStart: z.string().optional(),
  /** Whose key it is: the user who may read the event. */
  owner: z.string(),
  /** The token's subject for management actions; `key:<id>` for a use of the key. */
  actor: z.string(),
  address: z.string().optional(),
  /** The trace of the call it happened in (W3C trace id), when tracing is on. */
  traceId: z.string().optional(),
  detail: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
});
export type AuditEvent = z.infer<typeof auditEventSchema>;

export interface AuditRecord {
  action: AuditAction;
  keyId?: string;
  identity?: string | undefined;
  /** How a reader recognises the key: its name and its first characters (never the key). */
  key?: { name?: string | undefined; start?: string | undefined };
  owner: string;
  actor: string;
  req?: CallHead;
  detail?: Record<string, string | number>;
}

export interface AuditQuery {
  keyId?: string;
  identity?: string;
  action?: AuditAction;
  /** ISO date-times; `since` defaults to the retention limit. */
  since?: string;
  until?: string;
  limit: number;
  cursor?: string;
}

export interface AuditPage {
  items: AuditEvent[];
  nextCursor?: string;
}

/**
 * The answer header of a management action: whether its audit event is stored (`stored`), still
 * waiting for the store (`pending`), or kept by no store (`off`, the log only).
 */
export const AUDIT_HEADER = 'Tollgate-Audit';

/** One stored line as an event; undefined when it is not JSON or not in the event's shape. */
export function parseEventLine(line: string): AuditEvent | undefined {
  try {
    const parsed = auditEventSchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
