// One dialog that asks before a destructive action, runs it, and shows why it failed if it did.
import { ApiError } from './api.js';
import { $, find, messageOf, showBanner } from './dom.js';

/**
 * @typedef {{ title: string; text: string; confirm: string; run: () => Promise<void> }} Confirmation
 */

/** @param {{ onAuthError: (error: ApiError) => void }} handlers */
export function createConfirmDialog({ onAuthError }) {
  const dialog = $('confirm-dialog', HTMLDialogElement);
  const ok = $('confirm-ok', HTMLButtonElement);
  const banner = $('confirm-error');
  /** @type {Confirmation | null} */
  let pending = null;

  ok.addEventListener('click', async () => {
    const action = pending;
    if (action === null) return;
    ok.disabled = true;
    try {
      await action.run();
      dialog.close();
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        dialog.close();
        onAuthError(error);
      } else {
        // The server's message says what to do; its code is what to search the docs for.
        showBanner(
          banner,
          null,
          error instanceof ApiError ? `${error.message} (${error.code})` : messageOf(error),
        );
      }
    } finally {
      ok.disabled = false;
    }
  });
  find(dialog, '[data-close]').addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => (pending = null));

  return {
    /** @param {Confirmation} action */
    ask(action) {
      pending = action;
      showBanner(banner, null, null);
      $('confirm-title').textContent = action.title;
      $('confirm-text').textContent = action.text;
      ok.textContent = action.confirm;
      dialog.showModal();
      // Cancel is the safe default for a destructive action.
      find(dialog, '[data-close]').focus();
    },
  };
}
