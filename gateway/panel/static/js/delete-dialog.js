// Asks before deleting a key: programs using it stop working at once, on every gateway.
import { ApiError, deleteKey } from './api.js';
import { $, find, messageOf, showBanner } from './dom.js';

/** @typedef {import('./api.js').KeySummary} KeySummary */

/**
 * @param {{ onDeleted: (key: KeySummary) => void; onAuthError: (error: ApiError) => void }} handlers
 */
export function createDeleteDialog({ onDeleted, onAuthError }) {
  const dialog = $('delete-dialog', HTMLDialogElement);
  const text = $('delete-text');
  const confirm = $('delete-confirm', HTMLButtonElement);
  const banner = $('delete-error');
  /** @type {KeySummary | null} */
  let target = null;

  confirm.addEventListener('click', async () => {
    const key = target;
    if (key === null) return;
    confirm.disabled = true;
    try {
      await deleteKey(key.id);
      dialog.close();
      onDeleted(key);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        dialog.close();
        onAuthError(error);
      } else if (error instanceof ApiError && error.status === 404) {
        // Already gone (deleted in another tab): the outcome the user asked for.
        dialog.close();
        onDeleted(key);
      } else {
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
      const label = key.name ? `“${key.name}” (${key.start}…)` : `${key.start}…`;
      text.textContent = `Key ${label} will stop working immediately for every program that uses it. This cannot be undone.`;
      dialog.showModal();
      // Cancel is the safe default for a destructive action.
      find(dialog, '[data-close]').focus();
    },
  };
}
