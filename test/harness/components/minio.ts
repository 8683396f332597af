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

export async function startMinio(reg: ProcessRegistry, runDir: string): Promise<MinioInstance> {
  const dataDir = join(runDir, 'minio-data');
  mkdirSync(dataDir, { recursive: true });
  const [port, consolePort] = [await freePort(), await freePort()];
  const accessKeyId = `tollgate-${randomBytes(4).toString('hex')}`;
  const secretAccessKey = randomBytes(18).toString('base64url');
  const region = 'us-east-1';
  const proc = reg.spawn(
    'minio',
    bins.minio,
    [
      'server',
      dataDir,
      '--address',
      `127.0.0.1:${port}`,
      '--console-address',
      `127.0.0.1:${consolePort}`,
      '--quiet',
    ],
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
  const endpoint = `http://127.0.0.1:${port}`;
  await waitUntil('minio', () => httpOk(`${endpoint}/minio/health/ready`), { timeoutMs: 30_000, proc });
  return { endpoint, accessKeyId, secretAccessKey, region };
}
