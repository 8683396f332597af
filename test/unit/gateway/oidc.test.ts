import { createServer } from 'node:http';
import { freePort } from '../../../common/net/free-port.js';
import { TollgateError } from '../../../common/errors.js';
import { createTokenVerifier } from '../../../gateway/auth/oidc.js';

const policy = { groupsClaim: 'groups', adminGroups: ['admins'] };
// Well formed, signed by nobody: the verifier must reach the provider before it can say more.
const TOKEN = 'eyJhbGciOiJFUzI1NiIsImtpZCI6ImsifQ.eyJzdWIiOiJhIn0.c2ln';

const codeOf = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'accepted',
    (e: unknown) => (e instanceof TollgateError ? e.code : String(e)),
  );

describe('createTokenVerifier without a jwksUrl', () => {
  it('answers 503 while the discovery document cannot be read, and reads it once the provider is back', async () => {
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}/realms/data`;
    const verify = createTokenVerifier({ issuer, audience: 'x' }, policy);
    // Nothing listens yet: the provider is down.
    await expect(codeOf(verify(TOKEN))).resolves.toBe('identity_provider_unavailable');

    const provider = createServer((req, res) => {
      const body =
        req.url === '/realms/data/.well-known/openid-configuration'
          ? { issuer, jwks_uri: `${issuer}/keys` }
          : req.url === '/realms/data/keys'
            ? { keys: [] }
            : undefined;
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body ?? {}));
    });
    await new Promise<void>((r) => provider.listen(port, '127.0.0.1', r));
    try {
      // Discovered now: the token is judged on its signature (no key of the provider signed it).
      await expect(codeOf(verify(TOKEN))).resolves.toBe('invalid_token');
    } finally {
      await new Promise((r) => provider.close(r));
    }
  });
});
