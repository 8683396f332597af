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
      // The failure answers for itself a moment: a flood of tokens is not a flood of requests.
      await expect(codeOf(verify(TOKEN))).resolves.toBe('identity_provider_unavailable');
      await new Promise((r) => setTimeout(r, 1_100));
      // Discovered now: the token is judged on its signature (no key of the provider signed it).
      await expect(codeOf(verify(TOKEN))).resolves.toBe('invalid_token');
    } finally {
      await new Promise((r) => provider.close(r));
    }
  });
});

describe('createTokenVerifier with authorizedParties', () => {
  it('takes tokens issued to its own clients only, whichever claim the provider names them in', async () => {
    const { generateKeyPair, exportJWK, SignJWT } = await import('jose');
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    const jwks = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    const port = await freePort();
    await new Promise<void>((r) => jwks.listen(port, '127.0.0.1', r));
    const sign = (claims: Record<string, unknown>) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setSubject('alice')
        .setIssuer('urn:test')
        .setAudience('api://default')
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
    const config = {
      issuer: 'urn:test',
      audience: 'api://default',
      jwksUrl: `http://127.0.0.1:${port}/keys`,
    };
    const strict = createTokenVerifier({ ...config, authorizedParties: ['panel', 'cli'] }, policy);
    const open = createTokenVerifier(config, policy);
    try {
      await expect(strict(await sign({ azp: 'panel' }))).resolves.toMatchObject({ subject: 'alice' });
      await expect(strict(await sign({ cid: 'cli' }))).resolves.toMatchObject({ subject: 'alice' });
      await expect(strict(await sign({ client_id: 'cli' }))).resolves.toMatchObject({ subject: 'alice' });
      // Another application's token, for the same audience: refused here, saying why.
      const other = strict(await sign({ azp: 'team-dashboard' }));
      await expect(codeOf(other)).resolves.toBe('invalid_token');
      await expect(other).rejects.toThrow(/issued to another application/);
      await expect(codeOf(strict(await sign({})))).resolves.toBe('invalid_token');
      // The panel's own client is taken whenever the list is set, listed or not.
      const withPanel = createTokenVerifier(
        { ...config, clientId: 'panel', authorizedParties: ['cli'] },
        policy,
      );
      await expect(withPanel(await sign({ azp: 'panel' }))).resolves.toMatchObject({ subject: 'alice' });
      await expect(codeOf(withPanel(await sign({ azp: 'team-dashboard' })))).resolves.toBe('invalid_token');
      // Without the setting, the audience alone decides (as before).
      await expect(open(await sign({ azp: 'team-dashboard' }))).resolves.toMatchObject({ subject: 'alice' });
    } finally {
      await new Promise((r) => jwks.close(r));
    }
  });
});
