// The PKI a throw-away control plane needs, as envtest makes it: one CA that signs the serving
// cert and the admin client cert (group system:masters), plus a service-account signing key.
// P-256 keys: generated in milliseconds, and accepted by kube-apiserver and Node's TLS alike.
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { bins } from './paths.js';

const run = promisify(execFile);

export interface KubePki {
  dir: string;
  caCert: string;
  servingCert: string;
  servingKey: string;
  clientCert: string;
  clientKey: string;
  saPublicKey: string;
  saPrivateKey: string;
}

const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

async function openssl(dir: string, args: string[]): Promise<void> {
  await run(bins.openssl, args, { cwd: dir });
}

/** `sans`: the serving cert's extra subject alternative names (`IP:…`, `DNS:…`). */
export async function makeKubePki(dir: string, sans: string[] = []): Promise<KubePki> {
  mkdirSync(dir, { recursive: true });
  const p = (f: string): string => join(dir, f);
  await openssl(dir, [
    'req',
    '-x509',
    ...ecKey,
    '-keyout',
    p('ca.key'),
    '-out',
    p('ca.crt'),
    '-days',
    '7',
    '-subj',
    '/CN=tollgate-test-ca',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const signed = (name: string, subj: string, ext: string[]): Promise<void> =>
    openssl(dir, [
      'req',
      '-x509',
      ...ecKey,
      '-keyout',
      p(`${name}.key`),
      '-out',
      p(`${name}.crt`),
      '-days',
      '7',
      '-subj',
      subj,
      '-CA',
      p('ca.crt'),
      '-CAkey',
      p('ca.key'),
      '-addext',
      'basicConstraints=CA:FALSE',
      ...ext.flatMap((e) => ['-addext', e]),
    ]);
  await Promise.all([
    signed('apiserver', '/CN=kube-apiserver', [
      `subjectAltName=${['IP:127.0.0.1', 'DNS:localhost', 'DNS:kubernetes.default.svc', ...sans].join(',')}`,
      'extendedKeyUsage=serverAuth',
    ]),
    signed('admin', '/O=system:masters/CN=tollgate-admin', ['extendedKeyUsage=clientAuth']),
  ]);
  const sa = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  writeFileSync(p('sa-signer.key'), sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(p('sa-signer.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }));
  return {
    dir,
    caCert: p('ca.crt'),
    servingCert: p('apiserver.crt'),
    servingKey: p('apiserver.key'),
    clientCert: p('admin.crt'),
    clientKey: p('admin.key'),
    saPublicKey: p('sa-signer.pub'),
    saPrivateKey: p('sa-signer.key'),
  };
}
