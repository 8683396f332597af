import { parseStorageUri } from '../../common/storage/storage-uri.js';
import type { Env } from '../../common/storage/s3-client.js';
import { FileSegments } from './file-segments.js';
import type { SegmentStore } from './segment-store.js';

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
