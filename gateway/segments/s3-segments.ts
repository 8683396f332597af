import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { SegmentStore } from './segment-store.js';

/** Segments as objects under a bucket prefix (on a cluster: MinIO, S3 or any S3-compatible store). */
export class S3Segments implements SegmentStore {
  constructor(
    readonly uri: string,
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
  ) {}

  async put(name: string, body: string): Promise<void> {
    await this.s3.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.prefix + name,
        Body: body,
        ContentType: 'application/x-ndjson',
      }),
    );
  }

  async list(prefix: string): Promise<string[]> {
    const names: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.s3.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: this.prefix + prefix,
          ContinuationToken: token,
        }),
      );
      for (const o of page.Contents ?? []) {
        if (o.Key !== undefined) names.push(o.Key.slice(this.prefix.length));
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return names;
  }

  async get(name: string): Promise<string | undefined> {
    try {
      const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + name }));
      return await out.Body?.transformToString('utf8');
    } catch (e) {
      if (e instanceof NoSuchKey) return undefined;
      throw e;
    }
  }

  async delete(names: readonly string[]): Promise<void> {
    // DeleteObjects takes at most 1,000 keys a call.
    for (let i = 0; i < names.length; i += 1000) {
      await this.s3.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: names.slice(i, i + 1000).map((n) => ({ Key: this.prefix + n })), Quiet: true },
        }),
      );
    }
  }
}
