import { S3Client } from '@aws-sdk/client-s3';

export type Env = Readonly<Record<string, string | undefined>>;

/**
 * An S3 client configured the way every AWS tool is: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
 * (/ AWS_SESSION_TOKEN), AWS_REGION (or AWS_DEFAULT_REGION), AWS_ENDPOINT_URL(_S3) for MinIO and
 * other S3-compatible stores, which also get path-style addressing unless AWS_S3_FORCE_PATH_STYLE
 * says otherwise. Without keys in `env`, the SDK's default chain applies (IRSA, instance roles).
 */
export function s3ClientFromEnv(env: Env, opts: { maxAttempts?: number } = {}): S3Client {
  const endpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  const pathStyle = env.AWS_S3_FORCE_PATH_STYLE;
  const keyId = env.AWS_ACCESS_KEY_ID;
  const secret = env.AWS_SECRET_ACCESS_KEY;
  return new S3Client({
    region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    ...(endpoint ? { endpoint } : {}),
    forcePathStyle: pathStyle === undefined ? endpoint !== undefined : pathStyle === 'true',
    ...(keyId && secret
      ? {
          credentials: {
            accessKeyId: keyId,
            secretAccessKey: secret,
            ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
          },
        }
      : {}),
    ...(opts.maxAttempts ? { maxAttempts: opts.maxAttempts } : {}),
  });
}
