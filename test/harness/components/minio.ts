// MinIO (built by install.sh at a pinned release) with throw-away credentials and data dir.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { bins } from '../paths.js';
import { freePort } from '../../../common/net/free-port.js';
import type { ProcessRegistry } from '../processes.js';
import { httpOk, waitUntil } from '../wait.js';

export interface MinioInstance {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

/** Where a MinIO listens: loopback by default; the cluster's one in its node's namespace. */
export interface MinioPlacement {
  name: string;
  host: string;
  port?: number;
  wrap?: (command: string, args: string[]) => [string, string[]];
}

export async function startMinio(
  reg: ProcessRegistry,
  runDir: string,
  at: MinioPlacement = { name: 'minio', host: '127.0.0.1' },
): Promise<MinioInstance> {
  const dataDir = join(runDir, `${at.name}-data`);
  mkdirSync(dataDir, { recursive: true });
  const port = at.port ?? (await freePort());
  const consolePort = at.port === undefined ? await freePort() : at.port + 1;
  const wrap = at.wrap ?? ((c: string, a: string[]): [string, string[]] => [c, a]);
  const accessKeyId = `tollgate-${randomBytes(4).toString('hex')}`;
  const secretAccessKey = randomBytes(18).toString('base64url');
  const region = 'us-east-1';
  const proc = reg.spawn(
    at.name,
    ...wrap(bins.minio, [
      'server',
      dataDir,
      '--address',
      `${at.host}:${port}`,
      '--console-address',
      `${at.host}:${consolePort}`,
      '--quiet',
    ]),
    {
      env: {
        ...process.env,
        MINIO_ROOT_USER: accessKeyId,
        MINIO_ROOT_PASSWORD: secretAccessKey,
        MINIO_REGION: region,
        // No phoning home from a test run.
        MINIO_UPDATE: 'off',
        MINIO_CALLHOME_ENABLE: 'off',
      },
      stopTimeoutMs: 5000,
    },
  );
  const endpoint = `http://${at.host}:${port}`;
  await waitUntil('minio', () => httpOk(`${endpoint}/minio/health/ready`), { timeoutMs: 30_000, proc });
  return { endpoint, accessKeyId, secretAccessKey, region };
}
