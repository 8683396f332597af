import * as oauth from 'oauth4webapi';

/**
 * The provider's OpenID Connect discovery document (`<issuer>/.well-known/openid-configuration`),
 * read and checked by oauth4webapi (its `issuer` must be the one configured). Plain http is
 * accepted only for an http issuer, which is a loopback test provider or a deliberate choice.
 */
export async function discoverProvider(issuer: string): Promise<oauth.AuthorizationServer> {
  const url = new URL(issuer);
  const response = await oauth.discoveryRequest(url, {
    algorithm: 'oidc',
    signal: AbortSignal.timeout(5_000),
    [oauth.allowInsecureRequests]: url.protocol === 'http:',
  });
  return oauth.processDiscoveryResponse(url, response);
}
