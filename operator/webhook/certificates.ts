import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import forge from 'node-forge';

/**
 * The webhook's own TLS, with no cert-manager: a CA made for it alone and a serving certificate
 * signed by that CA for the webhook Service's DNS names. The API server trusts the CA through the
 * webhook configuration's caBundle. Keys are made by Node's crypto (native, fast); node-forge only
 * writes the X.509 structures.
 */
export interface WebhookCertificates {
  /** PEM: the CA that signed `cert`. */
  ca: string;
  /** PEM: the serving certificate. */
  cert: string;
  /** PEM (PKCS#8): the serving key. */
  key: string;
}

export interface IssueOptions {
  service: string;
  namespace: string;
  /** How long both certificates are valid. */
  validityMs: number;
  now?: Date;
}

/** The names the API server may use to reach the webhook Service. */
export const serviceDnsNames = (service: string, namespace: string): string[] => [
  service,
  `${service}.${namespace}`,
  `${service}.${namespace}.svc`,
  `${service}.${namespace}.svc.cluster.local`,
];

function newRsaKey(): {
  privateKey: forge.pki.rsa.PrivateKey;
  publicKey: forge.pki.rsa.PublicKey;
  pem: string;
} {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pkcs1 = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const forgeKey = forge.pki.privateKeyFromPem(pkcs1);
  return {
    privateKey: forgeKey,
    publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e),
    pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

function certificate(
  subject: string,
  publicKey: forge.pki.rsa.PublicKey,
  notBefore: Date,
  notAfter: Date,
): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  // A positive serial: the first bit of a DER integer is its sign.
  cert.serialNumber = `01${randomBytes(15).toString('hex')}`;
  cert.validity.notBefore = notBefore;
  cert.validity.notAfter = notAfter;
  cert.setSubject([{ name: 'commonName', value: subject }]);
  return cert;
}

export function issueWebhookCertificates(opts: IssueOptions): WebhookCertificates {
  const now = opts.now ?? new Date();
  // A minute of slack for clocks that disagree a little.
  const notBefore = new Date(now.getTime() - 60_000);
  const notAfter = new Date(now.getTime() + opts.validityMs);

  const caKey = newRsaKey();
  const ca = certificate(
    `tollgate-webhook-ca-${Math.floor(now.getTime() / 1000)}`,
    caKey.publicKey,
    notBefore,
    notAfter,
  );
  ca.setIssuer(ca.subject.attributes);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(caKey.privateKey, forge.md.sha256.create());

  const servingKey = newRsaKey();
  const names = serviceDnsNames(opts.service, opts.namespace);
  const serving = certificate(names[2] ?? opts.service, servingKey.publicKey, notBefore, notAfter);
  serving.setIssuer(ca.subject.attributes);
  serving.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: names.map((value) => ({ type: 2, value })) },
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  serving.sign(caKey.privateKey, forge.md.sha256.create());

  return {
    ca: forge.pki.certificateToPem(ca),
    cert: forge.pki.certificateToPem(serving),
    key: servingKey.pem,
  };
}

/** When the first certificate in `pem` stops being valid. */
export function notAfter(pem: string): Date {
  return new Date(new X509Certificate(pem).validTo);
}
