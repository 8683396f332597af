// A throw-away redis-server that speaks TLS only (no plaintext port) and admits one ACL user: what
// a managed Redis in production looks like. Its CA is the test PKI's (certs.ts).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { freePort } from '../../../common/net/free-port.js';
import { makeKubePki } from '../certs.js';
import { bins } from '../paths.js';
import type { ProcessRegistry } from '../processes.js';
import type { RedisTlsInfo } from '../types.js';
import { waitUntil } from '../wait.js';

const USER = 'tollgate';

/** Answers true once a TLS handshake with the server succeeds, trusting only `ca`. */
function handshake(port: number, ca: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: '127.0.0.1' });
    socket.setTimeout(1000);
    socket.once('secureConnect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

export async function startRedisTls(
  reg: ProcessRegistry,
  runDir: string,
  tag: string,
): Promise<RedisTlsInfo> {
  const pki = await makeKubePki(join(runDir, `redis-tls-${tag}-pki`));
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const proc = reg.spawn(
    `redis-tls-${tag}`,
    bins.redisServer,
    [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--tls-cert-file',
      pki.servingCert,
      '--tls-key-file',
      pki.servingKey,
      '--tls-ca-cert-file',
      pki.caCert,
      '--tls-auth-clients',
      'no',
      // No anonymous access: only the ACL user, with a password.
      '--user',
      'default',
      'off',
      '--user',
      USER,
      'on',
      `>${password}`,
      '~*',
      '&*',
      '+@all',
    ],
    { stopTimeoutMs: 5000 },
  );
  const ca = readFileSync(pki.caCert);
  await waitUntil(`redis-tls ${tag} on port ${port}`, () => handshake(port, ca), {
    timeoutMs: 10_000,
    proc,
    intervalMs: 50,
  });
  return {
    url: `rediss://${USER}:${password}@127.0.0.1:${port}`,
    port,
    caFile: pki.caCert,
    user: USER,
    password,
  };
}
