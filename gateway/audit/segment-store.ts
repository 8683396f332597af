import { parseStorageUri } from '../../common/storage/storage-uri.js';
import type { Env } from '../../common/storage/s3-client.js';
import { FileSegments } from './file-segments.js';

/**
 * Where the audit trail's segments live: immutable text objects named
 * `<owner-digest>/<yyyy-mm-dd>/<segment>.jsonl`. Objects are written whole and never changed,
 * so several gateway replicas share one place without coordinating.
 */
export interface SegmentStore {
  /** For messages: the URI the store was opened from. */
  readonly uri: string;
  put(name: string, body: string): Promise<void>;
  /** Names under `prefix` (which ends with '/'), in any order. */
  list(prefix: string): Promise<string[]>;
  /** The object's text; undefined if it is gone (retention may remove it between list and get). */
  get(name: string): Promise<string | undefined>;
  delete(names: readonly string[]): Promise<void>;
}

/**
 * `file:///var/lib/tollgate/audit` or `s3://bucket/audit` (credentials as for model storage). The
 * S3 SDK is loaded only for an s3:// trail: a sidecar, which keeps none, never carries it.
 */
export async function openSegmentStore(uri: string, env: Env): Promise<SegmentStore> {
  const loc = parseStorageUri(uri);
  if (loc.scheme === 'file') return new FileSegments(uri, loc.dir);
  const [{ S3Segments }, { s3ClientFromEnv }] = await Promise.all([
    import('./s3-segments.js'),
    import('../../common/storage/s3-client.js'),
  ]);
  return new S3Segments(uri, s3ClientFromEnv(env, { maxAttempts: 2 }), loc.bucket, loc.prefix);
}
