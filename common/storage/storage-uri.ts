import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TollgateError } from '../errors.js';

/**
 * A model folder's location. An S3 prefix is a folder: `s3://b/models/a` means the objects under
 * `models/a/`, never `models/ab/...`, so the prefix always ends with '/' (or is empty: the bucket).
 */
export type StorageLocation =
  { scheme: 's3'; bucket: string; prefix: string } | { scheme: 'file'; dir: string };

export function parseStorageUri(uri: string): StorageLocation {
  const bad = (why: string) =>
    new TollgateError(
      'invalid_storage_uri',
      `storage URI "${uri}" ${why}; use s3://<bucket>/<folder> or file:///<path>`,
      {
        field: 'storageUri',
      },
    );
  if (uri.startsWith('s3://')) {
    const rest = uri.slice('s3://'.length);
    const slash = rest.indexOf('/');
    const bucket = slash === -1 ? rest : rest.slice(0, slash);
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
      throw bad(`has no valid bucket name ("${bucket}")`);
    const folder = slash === -1 ? '' : rest.slice(slash + 1).replace(/\/+$/, '');
    if (folder.split('/').some((part) => part === '..' || part === '.'))
      throw bad('has "." or ".." segments');
    return { scheme: 's3', bucket, prefix: folder === '' ? '' : `${folder}/` };
  }
  if (uri.startsWith('file://')) {
    let dir: string;
    try {
      dir = fileURLToPath(uri);
    } catch {
      throw bad('is not an absolute file URL');
    }
    return { scheme: 'file', dir: path.resolve(dir) };
  }
  throw bad('has an unsupported scheme');
}
