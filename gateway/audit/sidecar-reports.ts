import { isIP } from 'node:net';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { hashKey } from '../../common/apikey/format.js';
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
  address?: string;
}

const MAX_LINE_BYTES = 512;
/** The list is cut to this many reports each time it is read: a flood cannot grow it for ever. */
const MAX_QUEUED = 10_000;
const TAKE = 1_000;

const reportSchema = z.strictObject({
  h: z.string().regex(/^[0-9a-f]{64}$/),
  c: z.string().regex(/^[a-z_]{1,64}$/),
  n: z.int().min(1).max(1_000_000),
  a: z
    .string()
    .max(64)
    .refine((a) => isIP(a) !== 0)
    .optional(),
});

/** The report line of a refusal of the key in `authorization`; undefined if it holds none. */
export function reportLine(
  authorization: string | undefined,
  code: string,
  count: number,
  address: string | undefined,
): string | undefined {
  let hash: string;
  try {
    hash = hashKey(parseAuthorizationHeader(authorization).key);
  } catch {
    return undefined;
  }
  return JSON.stringify({ h: hash, c: code, n: count, ...(address === undefined ? {} : { a: address }) });
}

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
  const [[, taken]] = ((await redis
    .multi()
    .lpop(redisKeys.auditSidecar, TAKE)
    .ltrim(redisKeys.auditSidecar, -MAX_QUEUED, -1)
    .exec()) ?? [[null, null]]) as [[Error | null, string[] | null]];
  const reports: SidecarReport[] = [];
  for (const line of taken ?? []) {
    if (Buffer.byteLength(line) > MAX_LINE_BYTES) continue;
    let parsed;
    try {
      parsed = reportSchema.safeParse(JSON.parse(line));
    } catch {
      continue;
    }
    if (!parsed.success) continue;
    const grant = await grantOf(parsed.data.h);
    if (grant === undefined) continue;
    reports.push({
      grant,
      code: parsed.data.c,
      count: parsed.data.n,
      ...(parsed.data.a === undefined ? {} : { address: parsed.data.a }),
    });
  }
  return reports;
}

/** Cuts the queue to MAX_QUEUED reports, taking none (a gateway that keeps no trail). */
export async function boundReports(redis: Redis): Promise<void> {
  await redis.ltrim(redisKeys.auditSidecar, -MAX_QUEUED, -1);
}
