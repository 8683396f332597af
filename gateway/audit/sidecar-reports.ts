import type { Redis } from 'ioredis';
import { z } from 'zod';
import { hashKey } from '../../common/apikey/format.js';
import { ERROR_STATUS, type ErrorCode } from '../../common/errors.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { parseAuthorizationHeader } from '../auth/authorization-header.js';

/**
 * Refusals a sidecar saw, on their way to the owners' trails. A sidecar holds no audit store (its
 * pod's team could read a credential it held), so it appends a report to `tg:audit:sidecar`
 * (its Redis user may do nothing else there) and the central gateways take them. A report names
 * the key by its hash only, and claims nothing else: the gateway reads the key's id, owner and
 * name from the sealed index entry, so a report can only speak of a key its sender has seen (one
 * that called the sender's own workload), and can only add a refusal note to that key's trail.
 */
export interface SidecarReport {
  grant: KeyGrant;
  code: string;
  /** How many refusals the report stands for (the sidecar sends one per key per interval). */
  count: number;
}

const MAX_LINE_BYTES = 512;
/** The list is cut to this many reports each time it is read: a flood cannot grow it for ever. */
const MAX_QUEUED = 10_000;
/** Reports taken per flush, and how long resolving them may take: the trail's own writes wait. */
const TAKE = 200;
const RESOLVE_BUDGET_MS = 2_000;
export const MAX_REPORTED = 1_000_000;

/** A refusal's code: one of Tollgate's own for a key that exists and was refused. */
const refusalCode = z
  .string()
  .refine((c): c is ErrorCode => c in ERROR_STATUS && [401, 403, 429].includes(ERROR_STATUS[c as ErrorCode]));

const reportSchema = z.strictObject({
  h: z.string().regex(/^[0-9a-f]{64}$/),
  c: refusalCode,
  n: z.int().min(1).max(MAX_REPORTED),
});

/**
 * Pops up to ARGV[1] reports, leaving out any longer than ARGV[2] bytes inside Redis (a flood of
 * huge lines never reaches the gateway's memory), and cuts what is left to ARGV[3].
 */
const TAKE_REPORTS = `local out = {}
for i = 1, tonumber(ARGV[1]) do
  local v = redis.call('LPOP', KEYS[1])
  if not v then break end
  if #v <= tonumber(ARGV[2]) then out[#out + 1] = v end
end
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[3]), -1)
return out`;

/** The hash of the key presented in `authorization`; undefined if it holds none. */
export function presentedKeyHash(authorization: string | undefined): string | undefined {
  try {
    return hashKey(parseAuthorizationHeader(authorization).key);
  } catch {
    return undefined;
  }
}

export const hashReportLine = (hash: string, code: string, count: number): string =>
  JSON.stringify({ h: hash, c: code, n: Math.min(count, MAX_REPORTED) });

export async function sendReport(redis: Redis, line: string): Promise<void> {
  await redis.rpush(redisKeys.auditSidecar, line);
}

/**
 * Takes up to a thousand reports, keeping those that are well formed and name a key the index
 * holds (`grantOf` opens its sealed entry), and cuts what is left to MAX_QUEUED.
 */
export async function takeReports(
  redis: Redis,
  grantOf: (hash: string) => Promise<KeyGrant | undefined>,
): Promise<SidecarReport[]> {
  let taken: string[];
  try {
    taken = (await redis.eval(
      TAKE_REPORTS,
      1,
      redisKeys.auditSidecar,
      TAKE,
      MAX_LINE_BYTES,
      MAX_QUEUED,
    )) as string[];
  } catch (err) {
    // Something other than a list there (a sidecar's user may append only; an operator's slip):
    // it is no queue of reports, so it goes, and sidecars append to a fresh one.
    if (err instanceof Error && /WRONGTYPE/.test(err.message)) await redis.del(redisKeys.auditSidecar);
    throw err;
  }
  const deadline = Date.now() + RESOLVE_BUDGET_MS;
  const reports: SidecarReport[] = [];
  for (const line of taken) {
    if (Date.now() > deadline) break;
    let parsed;
    try {
      parsed = reportSchema.safeParse(JSON.parse(line));
    } catch {
      continue;
    }
    if (!parsed.success) continue;
    const grant = await grantOf(parsed.data.h);
    if (grant === undefined) continue;
    reports.push({ grant, code: parsed.data.c, count: parsed.data.n });
  }
  return reports;
}

/** Cuts the queue to MAX_QUEUED reports, taking none (a gateway that keeps no trail). */
export async function boundReports(redis: Redis): Promise<void> {
  await redis.ltrim(redisKeys.auditSidecar, -MAX_QUEUED, -1);
}
