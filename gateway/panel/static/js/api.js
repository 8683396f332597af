// The management API (`/api/v1`), as the panel uses it. Every answer that is not a success becomes
// an ApiError carrying the server's `{"error", "code", "field"}`, so the UI can show the message next
// to the field at fault or in a banner.
import { getToken } from './auth.js';

// The panel is served at `<base>/panel/` and the API at `<base>/api/v1/`.
const BASE = new URL('../../api/v1/', import.meta.url);

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

async function call(method, path, { query, body } = {}) {
  const url = new URL(path, BASE);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== '') url.searchParams.set(name, value);
  }
  const headers = { Accept: 'application/json' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The gateway cannot be reached. Check your connection and retry.');
  }
  if (response.status === 204) return null;
  let payload = null;
  try {
    payload = await response.json();
  } catch {
    // A proxy's HTML error page, or an empty body: reported below with the status.
  }
  if (!response.ok) {
    const message =
      payload && typeof payload.error === 'string'
        ? payload.error
        : `The server answered ${response.status} ${response.statusText}.`;
    throw new ApiError(response.status, payload?.code ?? 'http_error', message, payload?.field);
  }
  return payload;
}

/** One page of the caller's keys: `{ items, nextCursor }`. */
export function listKeys({ search, cursor } = {}) {
  return call('GET', 'apikeys', { query: { search, cursor } });
}

/** Creates a key; the answer holds the key value, the only time it is ever sent. */
export function createKey(request) {
  return call('POST', 'apikeys', { body: request });
}

export function deleteKey(id) {
  return call('DELETE', `apikeys/${encodeURIComponent(id)}`);
}

/** What the create dialog offers: per module, the roles the caller may choose. */
export function listModules() {
  return call('GET', 'modules');
}
