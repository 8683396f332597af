// The management API (`/api/v1`), as the panel uses it. Every answer that is not a success becomes
// an ApiError carrying the server's `{"error", "code", "field"}`, so the UI can show the message next
// to the field at fault or in a banner.
import { getToken } from './auth.js';

/**
 * The answers and requests, typed by the contract: api-types.d.ts is generated from the OpenAPI
 * document the gateway serves (tools/codegen/panel-types.ts; a test fails when it is stale).
 * @typedef {import('./api-types.js').components['schemas']} Schemas
 * @typedef {import('./api-types.js').operations} Operations
 * @typedef {Schemas['ApiKey']['module']} Module
 * @typedef {Schemas['ApiKey'] & Partial<Pick<Schemas['ApiKeyPage']['items'][number], 'requestsPerHour'>>} KeySummary
 *   a key as the list shows it (with its hourly requests) or as one key's answer does
 * @typedef {Schemas['RolledApiKey']} RolledKey the roll answer: the new key (its value sent once)
 *   and the old one as it is now
 * @typedef {Schemas['ApiKeyUsage']['perMinute'][number]} UsagePoint
 * @typedef {Schemas['ApiKeyUsage']} KeyUsage
 * @typedef {Schemas['AuditPage']['items'][number]} AuditEvent
 * @typedef {Schemas['AuditPage']} AuditPage
 * @typedef {Schemas['CreatedApiKey']} CreatedKey the create answer: the key value, sent once
 * @typedef {Operations['createApiKey']['requestBody']['content']['application/json']} CreateRequest
 * @typedef {Schemas['Modules']['modules'][number]} ModuleChoice
 * @typedef {ModuleChoice['roles'][number]} RoleChoice
 * @typedef {Schemas['ApiKeyPage']} KeyPage
 * @typedef {Schemas['Caller']} Caller
 * @typedef {Schemas['OwnedApiKeyPage']['items'][number]} OwnedKey
 * @typedef {Schemas['OwnedApiKeyPage']} OwnedKeyPage
 * @typedef {Schemas['OffboardResult']} OffboardResult
 * @typedef {Schemas['ModelPage']['items'][number]} ModelSummary
 * @typedef {ModelSummary['inputs'][number]} Tensor
 * @typedef {ModelSummary['perMinute'][number]} ModelMinute
 */

// The panel is served at `<base>/panel/` and the API at `<base>/api/v1/`.
const BASE = new URL('../../api/v1/', import.meta.url);

export class ApiError extends Error {
  /**
   * @param {number} status 0 when the gateway could not be reached
   * @param {string} code
   * @param {string} message
   * @param {string} [field] the request field at fault
   */
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/**
 * @param {string} method
 * @param {string} path
 * @param {{ query?: Record<string, string | undefined>; body?: unknown }} [options]
 * @returns {Promise<unknown>} the parsed answer, or null for 204
 */
async function call(method, path, { query, body } = {}) {
  const url = new URL(path, BASE);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== '') url.searchParams.set(name, value);
  }
  /** @type {Record<string, string>} */
  const headers = { Accept: 'application/json' };
  const token = getToken();
  if (token) headers['Authorization'] = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The gateway cannot be reached. Check your connection and retry.');
  }
  if (response.status === 204) return null;
  /** @type {{ error?: unknown; code?: unknown; field?: unknown } | null} */
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
    const code = typeof payload?.code === 'string' ? payload.code : 'http_error';
    const field = typeof payload?.field === 'string' ? payload.field : undefined;
    throw new ApiError(response.status, code, message, field);
  }
  return payload;
}

/**
 * One page of the caller's keys.
 * @param {{ search?: string; cursor?: string }} [options]
 * @returns {Promise<KeyPage>}
 */
export async function listKeys({ search, cursor } = {}) {
  return /** @type {KeyPage} */ (await call('GET', 'apikeys', { query: { search, cursor } }));
}

/**
 * Creates a key; the answer holds the key value, the only time it is ever sent.
 * @param {CreateRequest} request
 * @returns {Promise<CreatedKey>}
 */
export async function createKey(request) {
  return /** @type {CreatedKey} */ (await call('POST', 'apikeys', { body: request }));
}

/** @param {string} id */
export async function deleteKey(id) {
  await call('DELETE', `apikeys/${encodeURIComponent(id)}`);
}

/**
 * What the create dialog offers: per module, the roles the caller may choose.
 * @returns {Promise<Schemas['Modules']>}
 */
export async function listModules() {
  return /** @type {Schemas['Modules']} */ (await call('GET', 'modules'));
}

/**
 * The caller's identities: a key made for one shares its limits and credits with its other keys.
 * @returns {Promise<Schemas['IdentityList']>}
 */
export async function listIdentities() {
  return /** @type {Schemas['IdentityList']} */ (await call('GET', 'identities'));
}

/**
 * Rolls a key: a new key with the same grant; the old one works for `gracePeriodSeconds` more.
 * @param {string} id
 * @param {number} gracePeriodSeconds
 * @returns {Promise<RolledKey>}
 */
export async function rollKey(id, gracePeriodSeconds) {
  return /** @type {RolledKey} */ (
    await call('POST', `apikeys/${encodeURIComponent(id)}/roll`, { body: { gracePeriodSeconds } })
  );
}

/**
 * @param {string} id
 * @returns {Promise<KeyUsage>}
 */
export async function keyUsage(id) {
  return /** @type {KeyUsage} */ (await call('GET', `apikeys/${encodeURIComponent(id)}/usage`));
}

/**
 * One page of the audit trail of the caller's keys, newest first.
 * @param {{ keyId?: string; action?: string; cursor?: string; limit?: number }} [options]
 * @returns {Promise<AuditPage>}
 */
export async function listAudit({ keyId, action, cursor, limit } = {}) {
  return /** @type {AuditPage} */ (
    await call('GET', 'audit', {
      query: { keyId, action, cursor, limit: limit === undefined ? undefined : String(limit) },
    })
  );
}

/**
 * Who the token says the caller is, and whether they are an administrator.
 * @returns {Promise<Caller>}
 */
export async function whoami() {
  return /** @type {Caller} */ (await call('GET', 'me'));
}

/**
 * Administrators: one page of every user's keys.
 * @param {{ search?: string; owner?: string; cursor?: string }} [options]
 * @returns {Promise<OwnedKeyPage>}
 */
export async function adminListKeys({ search, owner, cursor } = {}) {
  return /** @type {OwnedKeyPage} */ (
    await call('GET', 'admin/apikeys', { query: { search, owner, cursor } })
  );
}

/**
 * Administrators: revokes anyone's key.
 * @param {string} id
 */
export async function adminDeleteKey(id) {
  await call('DELETE', `admin/apikeys/${encodeURIComponent(id)}`);
}

/**
 * Administrators: revokes every key of one user.
 * @param {string} owner the user's subject
 * @returns {Promise<OffboardResult>}
 */
export async function offboardUser(owner) {
  return /** @type {OffboardResult} */ (await call('POST', 'admin/offboard', { body: { owner } }));
}

/**
 * Every Model, with its state, its calls over the last hour and an example request.
 * @returns {Promise<Schemas['ModelPage']>}
 */
export async function listModels() {
  return /** @type {Schemas['ModelPage']} */ (await call('GET', 'models'));
}

/**
 * @typedef {Schemas['Identity']} Identity
 * @typedef {Operations['createIdentity']['requestBody']['content']['application/json']} CreateIdentityRequest
 * @typedef {Operations['adminSetIdentityLimits']['requestBody']['content']['application/json']} IdentityLimitsRequest
 * @typedef {Schemas['Webhook']} Webhook
 * @typedef {Schemas['WebhookWithSecret']} WebhookWithSecret
 * @typedef {Operations['createWebhook']['requestBody']['content']['application/json']} CreateWebhookRequest
 * @typedef {Schemas['Delivery']} Delivery
 */

/**
 * @param {string} name
 * @returns {Promise<Identity>}
 */
export async function getIdentity(name) {
  return /** @type {Identity} */ (await call('GET', `identities/${encodeURIComponent(name)}`));
}

/**
 * @param {CreateIdentityRequest} request
 * @returns {Promise<Identity>}
 */
export async function createIdentity(request) {
  return /** @type {Identity} */ (await call('POST', 'identities', { body: request }));
}

/** @param {string} name */
export async function deleteIdentity(name) {
  await call('DELETE', `identities/${encodeURIComponent(name)}`);
}

/**
 * Administrators: an identity's named limits and credits (null removes one, absent leaves it).
 * @param {string} name
 * @param {IdentityLimitsRequest} request
 * @returns {Promise<Identity>}
 */
export async function setIdentityLimits(name, request) {
  return /** @type {Identity} */ (
    await call('PUT', `admin/identities/${encodeURIComponent(name)}/limits`, { body: request })
  );
}

/**
 * Administrators: tops up the credits an identity's keys share.
 * @param {string} name
 * @param {number} amount
 */
export async function addIdentityCredits(name, amount) {
  /** @type {Operations['adminAddIdentityCredits']['requestBody']['content']['application/json']} */
  const body = { add: amount };
  await call('POST', `admin/identities/${encodeURIComponent(name)}/credits`, { body });
}

/** @returns {Promise<{ items: Webhook[] }>} */
export async function listWebhooks() {
  return /** @type {{ items: Webhook[] }} */ (await call('GET', 'webhooks'));
}

/**
 * @param {CreateWebhookRequest} request
 * @returns {Promise<WebhookWithSecret>} its signing secret, in this answer only
 */
export async function createWebhook(request) {
  return /** @type {WebhookWithSecret} */ (await call('POST', 'webhooks', { body: request }));
}

/** @param {string} id */
export async function deleteWebhook(id) {
  await call('DELETE', `webhooks/${encodeURIComponent(id)}`);
}

/**
 * @param {string} id
 * @returns {Promise<WebhookWithSecret>} the new secret, in this answer only
 */
export async function rotateWebhookSecret(id) {
  return /** @type {WebhookWithSecret} */ (
    await call('POST', `webhooks/${encodeURIComponent(id)}/rotate-secret`)
  );
}

/**
 * An endpoint's deliveries, newest first.
 * @param {string} id
 * @param {{ status?: Delivery['status']; limit?: number }} [options]
 * @returns {Promise<{ items: Delivery[] }>}
 */
export async function listDeliveries(id, { status, limit } = {}) {
  return /** @type {{ items: Delivery[] }} */ (
    await call('GET', `webhooks/${encodeURIComponent(id)}/deliveries`, {
      query: { status, limit: limit === undefined ? undefined : String(limit) },
    })
  );
}

/**
 * @param {string} id
 * @param {string} delivery
 */
export async function replayDelivery(id, delivery) {
  await call('POST', `webhooks/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(delivery)}/replay`);
}
