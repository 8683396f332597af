// Shows a secret once: a new key's value, or a webhook endpoint's signing secret. Closing the
// dialog (button, Escape) clears it from the page.
import { $, find } from './dom.js';

/** @typedef {import('./api.js').CreatedKey} CreatedKey */

export function createRevealDialog() {
  const dialog = $('reveal-dialog', HTMLDialogElement);
  const field = $('reveal-key', HTMLInputElement);
  const copied = $('reveal-copied');
  const summary = $('reveal-summary');
  const title = $('reveal-title');
  const label = $('reveal-label');
  const warning = $('reveal-warning');
  // The key's wording, as the page has it: a webhook secret's replaces it while shown.
  const keyWording = {
    title: title.textContent ?? '',
    label: label.textContent ?? '',
    warning: warning.innerHTML,
  };

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

  /** @param {string} value */
  function open(value) {
    field.value = value;
    dialog.showModal();
    field.focus();
    field.select();
  }

  return {
    /** @param {Pick<CreatedKey, 'key' | 'module' | 'roles'>} created a new key, made or rolled */
    show(created) {
      title.textContent = keyWording.title;
      label.textContent = keyWording.label;
      warning.innerHTML = keyWording.warning;
      const who =
        created.module === 'bda' ? `workflow ${created.roles[0]}` : `roles ${created.roles.join(', ')}`;
      summary.textContent = `Module ${created.module}, ${who}.`;
      open(created.key);
    },
    /** @param {{ url: string; secret: string }} endpoint a webhook endpoint's new signing secret */
    showSecret(endpoint) {
      title.textContent = 'The endpoint’s signing secret';
      label.textContent = 'Signing secret';
      warning.textContent =
        'Copy this secret now: it is shown only once. Your receiver checks each delivery’s webhook-signature with it; rotate it to get another.';
      summary.textContent = `For ${endpoint.url}.`;
      open(endpoint.secret);
    },
  };
}
