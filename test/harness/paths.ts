// Where the harness finds what install.sh put in place. The slow builds live outside the clone,
// so a fresh clone on the same machine reuses them.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cacheDir = process.env['TOLLGATE_CACHE'] ?? join(homedir(), '.cache', 'tollgate');
export const binDir = join(cacheDir, 'bin');

export const bins = {
  redisServer: process.env['TOLLGATE_REDIS_SERVER'] ?? '/usr/bin/redis-server',
  kubeApiserver: join(binDir, 'kube-apiserver'),
  etcd: join(binDir, 'etcd'),
  minio: join(binDir, 'minio'),
  dex: join(binDir, 'dex'),
  prometheus: '/usr/bin/prometheus',
  // The kubectl built with kube-apiserver (same version); the system's one otherwise.
  kubectl: existsSync(join(binDir, 'kubectl')) ? join(binDir, 'kubectl') : 'kubectl',
  chromium: process.env['TOLLGATE_CHROMIUM'] ?? '/usr/bin/chromium',
  openssl: '/usr/bin/openssl',
};

export const venvDir = join(repoRoot, '.venv');
