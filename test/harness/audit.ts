import { NO_PROXIES } from '../../gateway/http/client-address.js';
import { createLogger } from '../../common/logger.js';
import { AuditLog } from '../../gateway/audit/audit-log.js';

/** For management API tests that are not about the audit trail: events reach the (silent) log only. */
export const unusedAudit = (): AuditLog =>
  new AuditLog(undefined, createLogger('audit', 'silent'), {
    flushMs: 1_000,
    retentionDays: 90,
    proxies: NO_PROXIES,
    refusalIntervalMs: 60_000,
  });
