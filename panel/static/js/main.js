// The management panel's entry point: sign-in state, the side menu, and wiring the pages to the
// dialogs. Every API failure ends up either next to a field, in a dialog's banner, or in the page
// banner. A session that expired goes back through the provider's sign-in and returns to what the
// user was doing; any other refused token ends on the sign-in page with the server's reason.
import { ApiError, deleteKey, whoami } from './api.js';
import { clearToken, displayName, getIdToken, getToken, setToken, takeTokenFromUrl } from './auth.js';
import { createAdminPage } from './admin-page.js';
import { createAuditPage } from './audit-page.js';
import { createConfirmDialog } from './confirm-dialog.js';
import { createCreateDialog } from './create-dialog.js';
import { createDetailsDialog } from './details-dialog.js';
import { $, messageOf, setFieldError, showBanner } from './dom.js';
import { createKeysPage } from './keys-page.js';
import { createIdentitiesPage } from './identities-page.js';
import { createWebhooksPage } from './webhooks-page.js';
import { createModelsPage } from './models-page.js';
import { createRevealDialog } from './reveal-dialog.js';
import { createRollDialog } from './roll-dialog.js';
import {
  beginSignIn,
  completeSignIn,
  isSignInResponse,
  loadPanelConfig,
  signOutAtProvider,
} from './signin.js';

/** @typedef {import('./signin.js').Resume} Resume */

const banner = $('banner');
const bannerText = $('banner-text');
const PAGES = ['keys', 'audit', 'models', 'identities', 'webhooks', 'admin'];
/** @type {import('./signin.js').SignInConfig | null} */
let signInConfig = null;
let isAdmin = false;

/** @param {string | null} message */
const say = (message) => showBanner(banner, bannerText, message);

/** @param {unknown} error */
function showError(error) {
  if (error instanceof ApiError && error.status === 401) {
    if (error.code === 'token_expired' && signInConfig !== null) {
      void renewSession();
      return;
    }
    signOut(refusedMessage(error));
    return;
  }
  say(messageOf(error));
}

/** @param {ApiError} error */
function refusedMessage(error) {
  // A token straight from the provider that this gateway refuses is a configuration mismatch
  // (audience, issuer), not something signing in again would fix.
  if (getIdToken() !== null && error.code === 'invalid_token') {
    return (
      `You signed in at the identity provider, but this gateway does not accept its token: ${error.message}. ` +
      'Ask an administrator to check the gateway’s OIDC settings (oidc.issuer, and oidc.audience: the audience ' +
      'the provider puts in its access tokens, usually the client id).'
    );
  }
  return `Your sign-in was refused: ${error.message}`;
}

/** Back through the provider's sign-in, keeping where the user was and what they had typed. */
async function renewSession() {
  if (signInConfig === null) return;
  /** @type {Resume} */
  const resume = {
    hash: window.location.hash,
    search: $('search', HTMLInputElement).value,
    create: createDialog.draft(),
    expired: true,
  };
  try {
    await beginSignIn(signInConfig, resume);
  } catch (error) {
    signOut(`Your session expired, and signing in again failed: ${messageOf(error)}`);
  }
}

const page = createKeysPage({
  onError: showError,
  onDelete: (key) => confirmDelete(key),
  onRoll: (key) => rollDialog.open(key),
  onDetails: (key) => void detailsDialog.open(key),
});
const auditPage = createAuditPage({ onError: showError });
const modelsPage = createModelsPage({ onError: showError });
const confirmDialog = createConfirmDialog({ onAuthError: showError });
const adminPage = createAdminPage({
  onError: showError,
  confirm: (action) => confirmDialog.ask(action),
  onDone: (message) => say(message),
});
const reveal = createRevealDialog();
const identitiesPage = createIdentitiesPage({
  onError: showError,
  isAdmin: () => isAdmin,
  confirm: (action) => confirmDialog.ask(action),
});
const webhooksPage = createWebhooksPage({
  onError: showError,
  isAdmin: () => isAdmin,
  confirm: (action) => confirmDialog.ask(action),
  reveal: (endpoint) => reveal.showSecret(endpoint),
});
const rollDialog = createRollDialog({
  onRolled: (rolled) => {
    say(null);
    reveal.show(rolled);
    page.reload();
  },
  onAuthError: showError,
});
const detailsDialog = createDetailsDialog({ onAuthError: showError });

/** The page the address names (`#keys`, `#audit`, `#models`, `#identities`, `#webhooks`, `#admin`); keys when it names none it may show. */
function currentPage() {
  const name = window.location.hash.slice(1);
  if (name === 'admin' && !isAdmin) return 'keys';
  return PAGES.includes(name) ? name : 'keys';
}

function showPage() {
  const name = currentPage();
  for (const p of PAGES) $(`${p}-page`).hidden = p !== name;
  for (const link of document.querySelectorAll('.nav-item')) {
    if (link.getAttribute('data-page') === name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (name === 'audit') auditPage.reload();
  else if (name === 'models') modelsPage.reload();
  else if (name === 'admin') adminPage.reload();
  else if (name === 'identities') void identitiesPage.load();
  else if (name === 'webhooks') void webhooksPage.load();
  else page.reload();
}
const createDialog = createCreateDialog({
  onCreated: (created) => {
    say(null);
    reveal.show(created);
    page.reload();
  },
  onAuthError: showError,
});
/**
 * Asks before deleting a key: programs using it stop working at once, on every gateway.
 * @param {import('./api.js').KeySummary} key
 */
function confirmDelete(key) {
  const label = key.name ? `“${key.name}” (${key.start}…)` : `${key.start}…`;
  confirmDialog.ask({
    title: 'Delete this key?',
    text: `Key ${label} will stop working immediately for every program that uses it. This cannot be undone.`,
    confirm: 'Delete key',
    run: async () => {
      try {
        await deleteKey(key.id);
      } catch (error) {
        // Already gone (deleted in another tab): the outcome the user asked for.
        if (!(error instanceof ApiError && error.status === 404)) throw error;
      }
      page.remove(key.id);
    },
  });
}

/** Shows the signed-in panel; who the user is (and whether an administrator) comes from the API. */
async function signedIn() {
  const token = getToken() ?? '';
  $('sign-in').hidden = true;
  const who = displayName(token);
  $('whoami').textContent = who ? `Signed in as ${who}` : 'Signed in';
  $('whoami').hidden = false;
  $('sign-out').hidden = false;
  try {
    const me = await whoami();
    isAdmin = me.admin;
    $('nav-admin').hidden = !isAdmin;
    $('whoami').textContent = `Signed in as ${me.name ?? me.subject}${isAdmin ? ' (administrator)' : ''}`;
  } catch (error) {
    showError(error);
    return false;
  }
  showPage();
  return true;
}

/** @param {string} [message] why the user is signed out, shown in the banner */
function signOut(message) {
  clearToken();
  isAdmin = false;
  for (const open of document.querySelectorAll('dialog[open]')) {
    if (open instanceof HTMLDialogElement) open.close();
  }
  for (const p of PAGES) $(`${p}-page`).hidden = true;
  $('nav-admin').hidden = true;
  $('whoami').hidden = true;
  $('sign-out').hidden = true;
  $('sign-in').hidden = false;
  say(message ?? null);
  const input = $('token-input', HTMLTextAreaElement);
  input.value = '';
  if (signInConfig !== null) $('provider-sign-in-button').focus();
  else input.focus();
}

/** @param {Resume} resume */
function restore(resume) {
  $('search', HTMLInputElement).value = resume.search;
  if (resume.expired) {
    say('Your session had expired. You are signed in again, and the panel is as you left it.');
  }
  if (resume.create) void createDialog.open(resume.create);
}

$('sign-in-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = $('token-input', HTMLTextAreaElement);
  const token = input.value.trim();
  if (!token) {
    setFieldError(input, $('token-error'), 'Paste an access token to sign in.');
    input.focus();
    return;
  }
  setFieldError(input, $('token-error'), null);
  setToken(token);
  say(null);
  void signedIn();
});

$('provider-sign-in-button').addEventListener('click', async () => {
  if (signInConfig === null) return;
  say(null);
  try {
    await beginSignIn(signInConfig, { hash: window.location.hash, search: '' });
  } catch (error) {
    say(messageOf(error));
  }
});

$('sign-out').addEventListener('click', async () => {
  const idToken = getIdToken();
  clearToken();
  if (signInConfig !== null && idToken !== null && (await signOutAtProvider(signInConfig, idToken))) return;
  signOut(
    idToken === null
      ? 'You are signed out.'
      : 'You are signed out of Tollgate. Your identity provider does not offer to end its own session from here: on a shared computer, sign out there too.',
  );
});
window.addEventListener('hashchange', () => {
  if (getToken()) showPage();
});
$('banner-close').addEventListener('click', () => say(null));
$('create-open').addEventListener('click', () => createDialog.open());

async function start() {
  const config = await loadPanelConfig();
  signInConfig = config.signIn;
  $('provider-sign-in').hidden = signInConfig === null;
  // With a provider, the token box stays for scripts and tests, folded away.
  $('token-sign-in', HTMLDetailsElement).open = signInConfig === null;
  if (signInConfig !== null && isSignInResponse()) {
    try {
      const done = await completeSignIn(signInConfig);
      setToken(done.accessToken, done.idToken);
      if (await signedIn()) restore(done.resume);
    } catch (error) {
      signOut(messageOf(error));
    }
    return;
  }
  // A `#token=` link signs in only where this gateway issues the tokens itself (`tollgate dev`).
  takeTokenFromUrl(config.tokenLinks);
  if (getToken()) await signedIn();
  else signOut();
}

void start();
