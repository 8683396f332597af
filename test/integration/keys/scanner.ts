import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A secret-scanning service as GitHub is one: a P-256 signing key of its own, and the public half
 * served the way GitHub publishes its keys (`{"public_keys": [{key_identifier, key, is_current}]}`).
 */
export async function scanningService(): Promise<{
  keysUrl: string;
  keyId: string;
  sign: (body: Buffer) => string;
  close: () => Promise<void>;
}> {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const keyId = 'test-scanner-2026';
  const published = JSON.stringify({
    public_keys: [
      {
        key_identifier: keyId,
        key: pair.publicKey.export({ type: 'spki', format: 'pem' }),
        is_current: true,
      },
    ],
  });
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(published);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    keysUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/meta/public_keys/secret_scanning`,
    keyId,
    sign: (body) => sign('sha256', body, pair.privateKey).toString('base64'),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
