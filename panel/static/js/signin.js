// "Sign in" with the organisation's identity provider: the OpenID Connect authorization code flow
// with PKCE, run in the browser as a public client by oauth4webapi (panva). The PKCE verifier, the
// state and the nonce wait in this tab's sessionStorage while the browser is at the provider, with
// what the user was doing, so an expired session comes back to the same place.
import * as oauth from '../vendor/oauth4webapi.js';

/**
 * @typedef {{ issuer: string; clientId: string; scopes: string; redirectPath?: string }} SignInConfig
 * @typedef {{ module: 'bda' | 'platform'; roles: string[]; name: string; expiry: string }} CreateDraft
 * @typedef {{ hash: string; search: string; create?: CreateDraft | null; expired?: boolean }} Resume
 *   what the user was doing when sent to the provider
 * @typedef {{ accessToken: string; idToken?: string; resume: Resume }} SignedIn
 */

const PENDING_KEY = 'tollgate.signin';
// The panel's own address: js/ is one level below it.
const PANEL_URL = new URL('../', import.meta.url);

export class SignInError extends Error {}

/**
 * The provider to sign in with (null: paste a token), and whether `#token=` links are taken.
 * @returns {Promise<{ signIn: SignInConfig | null, tokenLinks: boolean }>}
 */
export async function loadPanelConfig() {
  /** @type {{ signIn: SignInConfig | null, tokenLinks: boolean }} */
  const none = { signIn: null, tokenLinks: false };
  try {
    const response = await fetch(new URL('config.json', PANEL_URL), { cache: 'no-store' });
    if (!response.ok) return none;
    /** @type {{ signIn?: SignInConfig | null, tokenLinks?: boolean }} */
    const config = await response.json();
    return { signIn: config.signIn ?? null, tokenLinks: config.tokenLinks === true };
  } catch {
    return none;
  }
}

/** @param {SignInConfig} config */
function redirectUri(config) {
  const url = config.redirectPath ? new URL(config.redirectPath, PANEL_URL.origin) : new URL(PANEL_URL);
  return url.href;
}

/** @param {SignInConfig} config */
const insecure = (config) => ({ [oauth.allowInsecureRequests]: new URL(config.issuer).protocol === 'http:' });

/**
 * The provider's metadata, from its discovery document.
 * @param {SignInConfig} config
 */
async function provider(config) {
  const issuer = new URL(config.issuer);
  let response;
  try {
    response = await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...insecure(config) });
  } catch {
    throw new SignInError(
      `The identity provider at ${issuer.origin} cannot be reached from this browser. Check the address, ` +
        `and that the provider allows this page’s origin (${window.location.origin}) to call it (CORS).`,
    );
  }
  return oauth.processDiscoveryResponse(issuer, response);
}

/**
 * Leaves for the provider's sign-in page; the browser comes back to the panel with a code.
 * @param {SignInConfig} config
 * @param {Resume} resume
 */
export async function beginSignIn(config, resume) {
  const as = await provider(config);
  if (!as.authorization_endpoint) {
    throw new SignInError(`The provider at ${config.issuer} publishes no authorization endpoint.`);
  }
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const nonce = oauth.generateRandomNonce();
  window.sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, nonce, resume }));
  const url = new URL(as.authorization_endpoint);
  url.searchParams.set('client_id', config.clientId);
  url.searchParams.set('redirect_uri', redirectUri(config));
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', config.scopes);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', state);
  url.searchParams.set('nonce', nonce);
  window.location.assign(url.href);
}

/** True when the address is the provider sending the browser back (a code or an error). */
export function isSignInResponse() {
  const params = new URLSearchParams(window.location.search);
  return params.has('state') && (params.has('code') || params.has('error'));
}

/**
 * Finishes a sign-in the provider sent back: checks the state, exchanges the code (with the PKCE
 * verifier) and checks the ID token's signature, issuer, audience and nonce. The code leaves the
 * address bar and the history at once, whatever the outcome.
 * @param {SignInConfig} config
 * @returns {Promise<SignedIn>}
 */
export async function completeSignIn(config) {
  const here = new URL(window.location.href);
  const pendingText = window.sessionStorage.getItem(PENDING_KEY);
  window.sessionStorage.removeItem(PENDING_KEY);
  /** @type {{ verifier: string; state: string; nonce: string; resume: Resume } | null} */
  const pending = pendingText ? JSON.parse(pendingText) : null;
  window.history.replaceState(null, '', here.pathname + (pending?.resume.hash ?? ''));
  if (pending === null) {
    throw new SignInError(
      'This sign-in answer does not belong to a sign-in started in this tab (it may be an old or copied link). Sign in again.',
    );
  }
  const as = await provider(config);
  const client = { client_id: config.clientId };
  let params;
  try {
    params = oauth.validateAuthResponse(as, client, here, pending.state);
  } catch (error) {
    if (error instanceof oauth.AuthorizationResponseError) {
      const why = error.error_description ? `${error.error}: ${error.error_description}` : error.error;
      throw new SignInError(
        error.error === 'access_denied'
          ? `Sign-in was not completed: access was denied at the identity provider (${why}). To use the panel, sign in again and allow access.`
          : `The identity provider refused the sign-in (${why}).`,
      );
    }
    throw new SignInError(
      `The identity provider’s answer was not valid (${messageOf(error)}). Sign in again.`,
    );
  }
  try {
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      redirectUri(config),
      pending.verifier,
      insecure(config),
    );
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response, {
      expectedNonce: pending.nonce,
      requireIdToken: true,
    });
    return {
      accessToken: tokens.access_token,
      ...(tokens.id_token ? { idToken: tokens.id_token } : {}),
      resume: pending.resume,
    };
  } catch (error) {
    const detail =
      error instanceof oauth.ResponseBodyError
        ? `${error.error}${error.error_description ? `: ${error.error_description}` : ''}`
        : messageOf(error);
    throw new SignInError(`The sign-in could not be completed (${detail}). Sign in again.`);
  }
}

/**
 * Ends the session at the provider too, when it publishes an end-session endpoint (RP-initiated
 * logout); the browser comes back to the panel. Resolves false when the provider has none.
 * @param {SignInConfig} config
 * @param {string | null} idToken
 */
export async function signOutAtProvider(config, idToken) {
  let as;
  try {
    as = await provider(config);
  } catch {
    return false;
  }
  if (!as.end_session_endpoint) return false;
  const url = new URL(as.end_session_endpoint);
  url.searchParams.set('client_id', config.clientId);
  url.searchParams.set('post_logout_redirect_uri', redirectUri(config));
  if (idToken) url.searchParams.set('id_token_hint', idToken);
  window.location.assign(url.href);
  return true;
}

/** @param {unknown} error */
const messageOf = (error) => (error instanceof Error ? error.message : String(error));
