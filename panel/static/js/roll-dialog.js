// Rolls a key: the new key is shown once (in the reveal dialog); the old one keeps working for the
// grace period chosen here, then stops on every gateway.
import { ApiError, rollKey } from './api.js';
import { $, find, messageOf, showBanner } from './dom.js';

/** @typedef {import('./api.js').KeySummary} KeySummary */
/** @typedef {import('./api.js').RolledKey} RolledKey */

/**
 * @param {{ onRolled: (rolled: RolledKey) => void; onAuthError: (error: ApiError) => void }} handlers
 */
export function createRollDialog({ onRolled, onAuthError }) {
  const dialog = $('roll-dialog', HTMLDialogElement);
  const text = $('roll-text');
  const grace = $('roll-grace', HTMLSelectElement);
  const confirm = $('roll-confirm', HTMLButtonElement);
  const banner = $('roll-error');
  /** @type {KeySummary | null} */
  let target = null;

  confirm.addEventListener('click', async () => {
    const key = target;
    if (key === null) return;
    confirm.disabled = true;
    try {
      const rolled = await rollKey(key.id, Number(grace.value));
      dialog.close();
      onRolled(rolled);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        dialog.close();
        onAuthError(error);
      } else {
        // Too long a grace for this gateway, already rolled elsewhere: the server says which.
        showBanner(banner, null, messageOf(error));
      }
    } finally {
      confirm.disabled = false;
    }
  });
  find(dialog, '[data-close]').addEventListener('click', () => dialog.close());

  return {
    /** @param {KeySummary} key */
    open(key) {
      target = key;
      showBanner(banner, null, null);
      grace.value = '86400';
      const label = key.name ? `“${key.name}” (${key.start}…)` : `${key.start}…`;
      text.textContent = `Key ${label} gets a replacement with the same module, roles, limits and expiry. The new key is shown once.`;
      dialog.showModal();
      grace.focus();
    },
  };
}
