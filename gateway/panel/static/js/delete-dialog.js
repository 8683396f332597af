// Asks before deleting a key: programs using it stop working at once, on every gateway.
import { ApiError, deleteKey } from './api.js';
import { $, showBanner } from './dom.js';

export function createDeleteDialog({ onDeleted, onAuthError }) {
  const dialog = $('delete-dialog');
  const text = $('delete-text');
  const confirm = $('delete-confirm');
  const banner = $('delete-error');
  let target = null;

  confirm.addEventListener('click', async () => {
    confirm.disabled = true;
    try {
      await deleteKey(target.id);
      dialog.close();
      onDeleted(target);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        dialog.close();
        onAuthError(error);
      } else if (error instanceof ApiError && error.status === 404) {
        // Already gone (deleted in another tab): the outcome the user asked for.
        dialog.close();
        onDeleted(target);
      } else {
        showBanner(banner, null, error.message);
      }
    } finally {
      confirm.disabled = false;
    }
  });
  dialog.querySelector('[data-close]').addEventListener('click', () => dialog.close());

  return {
    open(key) {
      target = key;
      showBanner(banner, null, null);
      const label = key.name ? `“${key.name}” (${key.start}…)` : `${key.start}…`;
      text.textContent = `Key ${label} will stop working immediately for every program that uses it. This cannot be undone.`;
      dialog.showModal();
      // Cancel is the safe default for a destructive action.
      dialog.querySelector('[data-close]').focus();
    },
  };
}
