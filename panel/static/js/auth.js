// The panel acts as the signed-in user with an OIDC access token. It comes from "Sign in" (the
// authorization code flow with PKCE, signin.js), from the paste box, or from a `#token=` fragment
// (`tollgate dev`; a fragment is never sent to a server). It is kept in this tab's sessionStorage
// only: never in a URL, never in localStorage or a cookie; closing the tab signs out. The page's
// Content-Security-Policy lets no script but the panel's own run beside it.
const TOKEN_KEY = 'tollgate.token';
// The provider's ID token, kept only to name the session when signing out at the provider.
const ID_TOKEN_KEY = 'tollgate.idToken';

/**
 * Moves a `#token=` fragment into sessionStorage (when `accept`: only `tollgate dev`'s panel takes
 * such links; with an identity provider, a link could sign the user into someone else's account)
 * and removes it from the address bar and history either way.
 * @param {boolean} accept
 */
export function takeTokenFromUrl(accept) {
  const params = new URLSearchParams(window.location.hash.slice(1));
  const token = params.get('token');
  if (!token) return;
  if (accept) setToken(token);
  params.delete('token');
  const rest = params.toString();
  const url = window.location.pathname + window.location.search + (rest ? `#${rest}` : '');
  window.history.replaceState(null, '', url);
}

/** @returns {string | null} */
export function getToken() {
  return window.sessionStorage.getItem(TOKEN_KEY);
}

/**
 * @param {string} token the access token
 * @param {string} [idToken] the ID token, when the provider's sign-in gave one
 */
export function setToken(token, idToken) {
  window.sessionStorage.setItem(TOKEN_KEY, token.trim());
  if (idToken) window.sessionStorage.setItem(ID_TOKEN_KEY, idToken);
  else window.sessionStorage.removeItem(ID_TOKEN_KEY);
}

/** @returns {string | null} */
export function getIdToken() {
  return window.sessionStorage.getItem(ID_TOKEN_KEY);
}

export function clearToken() {
  window.sessionStorage.removeItem(TOKEN_KEY);
  window.sessionStorage.removeItem(ID_TOKEN_KEY);
}

/**
 * Reads the token's claims for display only (the user's name in the side menu). The server verifies
 * the token; nothing here trusts these claims.
 * @param {string} token
 * @returns {string | null}
 */
export function displayName(token) {
  try {
    const part = token.split('.')[1];
    if (!part) return null;
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/'));
    /** @type {Record<string, unknown>} */
    const claims = JSON.parse(json);
    const name = claims['preferred_username'] || claims['email'] || claims['name'] || claims['sub'];
    return typeof name === 'string' ? name : null;
  } catch {
    return null;
  }
}
