import { FileStore } from './file-store.js';
import type { ObjectStore } from './object-store.js';
import { s3ClientFromEnv, type Env } from '../../common/storage/s3-client.js';
import { parseStorageUri } from '../../common/storage/storage-uri.js';
import { S3Store } from './s3-store.js';

/** The store behind a storageUri, with credentials and endpoint from `env` (AWS variables). */
export function openStore(
  uri: string,
  env: Env,
  opts: { maxAttempts?: number; refusedAddress?: (address: string) => boolean } = {},
): ObjectStore {
  const loc = parseStorageUri(uri);
  return loc.scheme === 'file'
    ? new FileStore(loc.dir)
    : new S3Store(s3ClientFromEnv(env, opts), loc.bucket, loc.prefix);
}
