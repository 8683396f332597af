// The management panel's entry point: sign-in state, the side menu, and wiring the page to the
// dialogs. Every API failure ends up either next to a field, in a dialog's banner, or in the page
// banner; a refused token sends the user back to the sign-in box with the server's reason.
import { ApiError } from './api.js';
import { clearToken, displayName, getToken, setToken, takeTokenFromUrl } from './auth.js';
import { createAuditPage } from './audit-page.js';
import { createCreateDialog } from './create-dialog.js';
import { createDeleteDialog } from './delete-dialog.js';
import { createDetailsDialog } from './details-dialog.js';
import { $, messageOf, setFieldError, showBanner } from './dom.js';
import { createKeysPage } from './keys-page.js';
import { createRevealDialog } from './reveal-dialog.js';
import { createRollDialog } from './roll-dialog.js';

const banner = $('banner');
const bannerText = $('banner-text');

/** @param {unknown} error */
function showError(error) {
  if (error instanceof ApiError && error.status === 401) {
    signOut(`Your sign-in was refused: ${error.message}`);
    return;
  }
  showBanner(banner, bannerText, messageOf(error));
}

const page = createKeysPage({
  onError: showError,
  onDelete: (key) => deleteDialog.open(key),
  onRoll: (key) => rollDialog.open(key),
  onDetails: (key) => void detailsDialog.open(key),
});
const auditPage = createAuditPage({ onError: showError });
const reveal = createRevealDialog();
const rollDialog = createRollDialog({
  onRolled: (rolled) => {
    showBanner(banner, bannerText, null);
    reveal.show(rolled);
    page.reload();
  },
  onAuthError: showError,
});
const detailsDialog = createDetailsDialog({ onAuthError: showError });

/** The page the address names (`#keys`, `#audit`); keys when it names none. */
function currentPage() {
  return location.hash === '#audit' ? 'audit' : 'keys';
}

function showPage() {
  const name = currentPage();
  $('keys-page').hidden = name !== 'keys';
  $('audit-page').hidden = name !== 'audit';
  for (const link of document.querySelectorAll('.nav-item')) {
    if (link.getAttribute('data-page') === name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (name === 'audit') auditPage.reload();
  else page.reload();
}
const createDialog = createCreateDialog({
  onCreated: (created) => {
    showBanner(banner, bannerText, null);
    reveal.show(created);
    page.reload();
  },
  onAuthError: showError,
});
const deleteDialog = createDeleteDialog({
  onDeleted: (key) => page.remove(key.id),
  onAuthError: showError,
});

function signedIn() {
  const token = getToken() ?? '';
  $('sign-in').hidden = true;
  const who = displayName(token);
  $('whoami').textContent = who ? `Signed in as ${who}` : 'Signed in';
  $('whoami').hidden = false;
  $('sign-out').hidden = false;
  showPage();
}

/** @param {string} [message] why the user is signed out, shown in the banner */
function signOut(message) {
  clearToken();
  $('keys-page').hidden = true;
  $('audit-page').hidden = true;
  $('whoami').hidden = true;
  $('sign-out').hidden = true;
  $('sign-in').hidden = false;
  showBanner(banner, bannerText, message ?? null);
  const input = $('token-input', HTMLTextAreaElement);
  input.value = '';
  input.focus();
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
  showBanner(banner, bannerText, null);
  signedIn();
});

$('sign-out').addEventListener('click', () => signOut());
window.addEventListener('hashchange', () => {
  if (getToken()) showPage();
});
$('banner-close').addEventListener('click', () => showBanner(banner, bannerText, null));
$('create-open').addEventListener('click', () => createDialog.open());

takeTokenFromUrl();
if (getToken()) signedIn();
else signOut();
