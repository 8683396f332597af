// Shows a new key's value once. Closing the dialog (button, Escape) clears it from the page.
import { $, find } from './dom.js';

/** @typedef {import('./api.js').CreatedKey} CreatedKey */

export function createRevealDialog() {
  const dialog = $('reveal-dialog', HTMLDialogElement);
  const field = $('reveal-key', HTMLInputElement);
  const copied = $('reveal-copied');
  const summary = $('reveal-summary');

  async function copy() {
    try {
      await navigator.clipboard.writeText(field.value);
    } catch {
      // Clipboard permission refused (or not a secure context): select it for Ctrl+C instead.
      field.select();
      copied.textContent = 'Press Ctrl+C (⌘C) to copy the selected key.';
      return;
    }
    copied.textContent = 'Copied to the clipboard.';
  }

  $('reveal-copy').addEventListener('click', copy);
  find(dialog, '[data-close]').addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => {
    field.value = '';
    copied.textContent = '';
    summary.textContent = '';
  });

  return {
    /** @param {Pick<CreatedKey, 'key' | 'module' | 'roles'>} created a new key, made or rolled */
    show(created) {
      field.value = created.key;
      const who =
        created.module === 'bda' ? `workflow ${created.roles[0]}` : `roles ${created.roles.join(', ')}`;
      summary.textContent = `Module ${created.module}, ${who}.`;
      dialog.showModal();
      field.focus();
      field.select();
    },
  };
}
