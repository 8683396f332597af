import type { S3Client } from '@aws-sdk/client-s3';
import { GetObjectCommand, ListObjectsV2Command, S3ServiceException } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { isTollgateError, TollgateError } from '../../common/errors.js';
import { folderTooLarge, fileTooLarge } from './limits.js';
import {
  MAX_LISTED_OBJECTS,
  MAX_LISTED_PAGES,
  MAX_TEXT_BYTES,
  type ObjectStore,
  type StoredObject,
} from './object-store.js';

const ACCESS_DENIED = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'Forbidden',
  'AllAccessDisabled',
]);

export class S3Store implements ObjectStore {
  readonly uri: string;
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    /** '' or ends with '/'. */
    private readonly prefix: string,
  ) {
    this.uri = `s3://${bucket}/${prefix}`;
  }

  async list(signal?: AbortSignal): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    let token: string | undefined;
    let listed = 0;
    let pages = 0;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.prefix,
            ...(token ? { ContinuationToken: token } : {}),
          }),
          signal ? { abortSignal: signal } : {},
        );
      } catch (e) {
        throw this.mapError(e, '');
      }
      // Counted as listed, not as kept; and pages too: a store answering pages of nothing must end.
      listed += page.Contents?.length ?? 0;
      pages += 1;
      if (listed > MAX_LISTED_OBJECTS || pages > MAX_LISTED_PAGES) throw folderTooLarge(this.uri);
      for (const o of page.Contents ?? []) {
        // Console-made "folders" are zero-byte keys ending in '/': not files.
        if (!o.Key || o.Key.endsWith('/')) continue;
        out.push({ path: o.Key.slice(this.prefix.length), size: o.Size ?? 0 });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  async readText(path: string, signal?: AbortSignal): Promise<string> {
    const body = await this.openRead(path, undefined, signal);
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of body) {
        size += (chunk as Buffer).length;
        if (size > MAX_TEXT_BYTES) throw fileTooLarge(this.uri + path);
        chunks.push(chunk as Buffer);
      }
    } catch (e) {
      body.destroy();
      throw isTollgateError(e) ? e : this.mapError(e, path);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  async openRead(
    path: string,
    range?: { start: number; end: number },
    signal?: AbortSignal,
  ): Promise<Readable> {
    try {
      const res = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: this.prefix + path,
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
        signal ? { abortSignal: signal } : {},
      );
      return res.Body as Readable;
    } catch (e) {
      throw this.mapError(e, path);
    }
  }

  private mapError(e: unknown, path: string): TollgateError {
    const where = `s3://${this.bucket}/${this.prefix}${path}`;
    const name = e instanceof Error ? e.name : '';
    const status = e instanceof S3ServiceException ? e.$metadata.httpStatusCode : undefined;
    if (name === 'NoSuchBucket') {
      return new TollgateError(
        'no_such_bucket',
        `bucket "${this.bucket}" does not exist; check the bucket in storageUri and AWS_ENDPOINT_URL`,
        { cause: e },
      );
    }
    if (ACCESS_DENIED.has(name) || status === 403) {
      return new TollgateError(
        'access_denied',
        `access denied reading ${where} (${name || status}); check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY and the bucket policy`,
        { cause: e },
      );
    }
    if (name === 'NoSuchKey' || (status === 404 && path !== '')) {
      return new TollgateError(
        'object_vanished',
        `${where} was listed but is gone (deleted or renamed while pulling); retry once the upload is complete`,
        { cause: e },
      );
    }
    const why = e instanceof Error ? e.message : String(e);
    return new TollgateError('storage_unavailable', `cannot reach ${where}: ${why}`, { cause: e });
  }
}
