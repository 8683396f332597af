import { S3Client } from '@aws-sdk/client-s3';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { LookupFunction } from 'node:net';

export type Env = Readonly<Record<string, string | undefined>>;

const CONNECT_TIMEOUT_MS = 5_000;
const SILENCE_TIMEOUT_MS = 30_000;

/**
 * An S3 client configured the way every AWS tool is: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
 * (/ AWS_SESSION_TOKEN), AWS_REGION (or AWS_DEFAULT_REGION), AWS_ENDPOINT_URL(_S3) for MinIO and
 * other S3-compatible stores, which also get path-style addressing unless AWS_S3_FORCE_PATH_STYLE
 * says otherwise. Without keys in `env`, the SDK's default chain applies (IRSA, instance roles).
 */
export function s3ClientFromEnv(
  env: Env,
  opts: { maxAttempts?: number; refusedAddress?: (address: string) => boolean } = {},
): S3Client {
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
    // A store that never answers, or answers a byte at a time, must not hold its caller (the
    // operator serves every team): bounded to connect, and while a connection is silent.
    requestHandler: {
      connectionTimeout: CONNECT_TIMEOUT_MS,
      socketTimeout: SILENCE_TIMEOUT_MS,
      ...(opts.refusedAddress === undefined
        ? {}
        : {
            httpAgent: new HttpAgent({ keepAlive: true, lookup: guardedLookup(opts.refusedAddress) }),
            httpsAgent: new HttpsAgent({ keepAlive: true, lookup: guardedLookup(opts.refusedAddress) }),
          }),
    },
  });
}

/**
 * A resolver that fails a connection whose name resolves to a refused address: the check is made
 * on the addresses the connection will use, so a name re-pointed after it was first checked (DNS
 * rebinding) reaches nothing it may not.
 */
function guardedLookup(refused: (address: string) => boolean): LookupFunction {
  return ((hostname: string, options: LookupOptions, callback: LookupCallback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const bad = addresses.find((a) => refused(a.address));
      if (bad !== undefined || addresses.length === 0) {
        const why = bad === undefined ? 'no address' : bad.address;
        const e = Object.assign(
          new Error(`${hostname} resolves to ${why}, which a Model's store may not be`),
          {
            code: 'EADDRNOTALLOWED',
          },
        );
        return callback(e, '', 0);
      }
      if (options.all === true) return (callback as unknown as AllCallback)(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  }) as LookupFunction;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string, family: number) => void;
type AllCallback = (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void;
