// The panel acts as the signed-in user with an OIDC bearer token. It arrives in the URL fragment
// (`#token=...`, never sent to a server) from `tollgate dev`, or is pasted in the sign-in box. It is
// kept in sessionStorage only: closing the tab signs out.
const STORAGE_KEY = 'tollgate.token';

/** Moves a `#token=` fragment into sessionStorage and removes it from the address bar and history. */
export function takeTokenFromUrl() {
  const params = new URLSearchParams(window.location.hash.slice(1));
  const token = params.get('token');
  if (!token) return;
  setToken(token);
  params.delete('token');
  const rest = params.toString();
  const url = window.location.pathname + window.location.search + (rest ? `#${rest}` : '');
  window.history.replaceState(null, '', url);
}

/** @returns {string | null} */
export function getToken() {
  return window.sessionStorage.getItem(STORAGE_KEY);
}

/** @param {string} token */
export function setToken(token) {
  window.sessionStorage.setItem(STORAGE_KEY, token.trim());
}

export function clearToken() {
  window.sessionStorage.removeItem(STORAGE_KEY);
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
