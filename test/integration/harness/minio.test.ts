import { randomBytes } from 'node:crypto';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { minio } from '../../harness/index.js';

describe('harness: minio', () => {
  it('stores and returns an object through @aws-sdk/client-s3', async () => {
    const m = await minio();
    const s3 = new S3Client({
      endpoint: m.endpoint,
      region: m.region,
      forcePathStyle: true,
      credentials: { accessKeyId: m.accessKeyId, secretAccessKey: m.secretAccessKey },
    });
    try {
      const bucket = `harness-smoke-${randomBytes(4).toString('hex')}`;
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
      const body = JSON.stringify({ hello: 'minio' });
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'dir/obj.json', Body: body }));
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'dir/obj.json' }));
      expect(await got.Body?.transformToString()).toBe(body);
    } finally {
      s3.destroy();
    }
  });
});
