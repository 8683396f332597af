import { createHash } from 'node:crypto';

/** How the trail is laid out in its store: a folder per owner (a digest), then per day. */

export const DAY_MS = 86_400_000;

export const ownerDigest = (owner: string): string =>
  createHash('sha256').update(owner).digest('hex').slice(0, 32);
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
/**
 * The exact name of a segment this class writes (`write`): the retention sweep deletes nothing
 * else, whatever else shares the bucket or prefix (`s3://lake` may hold `sales/2024-01-31/…`).
 */
export const SEGMENT_NAME = /^[0-9a-f]{32}\/(\d{4}-\d{2}-\d{2})\/\d+-[0-9a-f]{8}-[0-9a-z]+\.jsonl$/;

/** When a segment was written, from its name (`<ms>-<replica>-<seq>.jsonl`); unknown: as if now. */
export function writtenAt(name: string): number {
  const ms = Number(/\/(\d+)-[^/]*\.jsonl$/.exec(name)?.[1]);
  return Number.isFinite(ms) ? ms : Date.now();
}
