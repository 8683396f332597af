// The "Create key" dialog: module, role(s), optional name and expiry. On success it hands the
// answer (which holds the key value, sent this once) to the reveal dialog and forgets it.
import { ApiError, createKey, listIdentities, listModules } from './api.js';
import { $, el, find, messageOf, setFieldError, showBanner } from './dom.js';
import { endOfDayUtc } from './format.js';

/**
 * @typedef {import('./api.js').CreatedKey} CreatedKey
 * @typedef {import('./api.js').CreateRequest} CreateRequest
 * @typedef {import('./api.js').Module} Module
 * @typedef {import('./api.js').ModuleChoice} ModuleChoice
 * @typedef {[HTMLElement | null, HTMLElement]} ErrorSlot a field's control and its error text
 * @typedef {import('./signin.js').CreateDraft} CreateDraft
 */

/**
 * @param {{ onCreated: (created: CreatedKey) => void; onAuthError: (error: ApiError) => void }} handlers
 */
export function createCreateDialog({ onCreated, onAuthError }) {
  const dialog = $('create-dialog', HTMLDialogElement);
  const form = $('create-form', HTMLFormElement);
  const save = $('create-save', HTMLButtonElement);
  const bdaField = $('role-field-bda');
  const bdaSelect = $('role-bda', HTMLSelectElement);
  const platformField = $('role-field-platform');
  const platformList = $('role-platform');
  const name = $('key-name', HTMLInputElement);
  const expiry = $('key-expiry', HTMLInputElement);
  const identity = $('key-identity', HTMLSelectElement);
  const banner = $('create-error');
  /** @type {Record<string, ErrorSlot>} */
  const errors = {
    bda: [bdaSelect, $('role-error-bda')],
    platform: [null, $('role-error-platform')],
    name: [name, $('name-error')],
    expiresAt: [expiry, $('expiry-error')],
    identity: [identity, $('identity-error')],
  };

  /** @returns {Module} */
  const selectedModule = () => {
    const checked = form.querySelector('input[name="module"]:checked');
    return checked instanceof HTMLInputElement && checked.value === 'bda' ? 'bda' : 'platform';
  };

  /** The first platform role's checkbox, where focus goes for a platform roles error. */
  const firstRoleBox = () => /** @type {HTMLElement | null} */ (platformList.querySelector('input'));

  function clearErrors() {
    for (const [control, node] of Object.values(errors)) setFieldError(control, node, null);
    showBanner(banner, null, null);
  }

  function showModule() {
    const isBda = selectedModule() === 'bda';
    bdaField.hidden = !isBda;
    platformField.hidden = isBda;
    clearErrors();
  }

  /** @param {ModuleChoice[]} modules */
  function fillRoles(modules) {
    const bda = modules.find((m) => m.module === 'bda')?.roles ?? [];
    const platform = modules.find((m) => m.module === 'platform')?.roles ?? [];
    bdaSelect.replaceChildren(
      el('option', {
        text: bda.length ? 'Choose a workflow…' : 'You own no workflows yet',
        attrs: { value: '' },
      }),
      ...bda.map((role) =>
        el('option', {
          text: role.description ? `${role.id} — ${role.description}` : role.id,
          attrs: { value: role.id },
        }),
      ),
    );
    $('role-bda-help').textContent = bda.length
      ? 'The key calls this workflow’s services only.'
      : 'A workflow appears here once its Workflow record names you as its owner (an administrator creates it; standalone: tollgate route add --owner).';
    platformList.replaceChildren(
      ...platform.map((role) => {
        const box = el('input', { attrs: { type: 'checkbox', name: 'platform-role', value: role.id } });
        return el('label', {}, [
          box,
          el('span', {}, [
            el('span', { className: 'mono', text: role.id }),
            el('small', { text: role.description ?? '' }),
          ]),
        ]);
      }),
    );
  }

  /** @returns {CreateRequest} */
  function readForm() {
    const module = selectedModule();
    const roles =
      module === 'bda'
        ? [bdaSelect.value].filter(Boolean)
        : [...platformList.querySelectorAll('input:checked')].map((box) =>
            box instanceof HTMLInputElement ? box.value : '',
          );
    /** @type {CreateRequest} */
    const request = { module, roles };
    if (name.value.trim()) request.name = name.value.trim();
    if (expiry.value) request.expiresAt = endOfDayUtc(expiry.value);
    if (identity.value) request.identity = identity.value;
    return request;
  }

  /**
   * Checks what the browser can; the server checks everything again and its word is final.
   * @param {CreateRequest} request
   */
  function checkForm(request) {
    if (request.roles.length > 0) return true;
    const slot = errors[request.module];
    if (slot === undefined) return false;
    const [control, node] = slot;
    setFieldError(
      control,
      node,
      request.module === 'bda' ? 'Choose the workflow this key may call.' : 'Choose at least one role.',
    );
    (control ?? firstRoleBox())?.focus();
    return false;
  }

  /**
   * @param {unknown} error
   * @param {Module} module
   */
  function showServerError(error, module) {
    const field = error instanceof ApiError ? error.field : undefined;
    const target = field === 'roles' || field === 'role' ? module : field;
    const slot = target === undefined ? undefined : errors[target];
    if (slot) {
      setFieldError(slot[0], slot[1], messageOf(error));
      (slot[0] ?? firstRoleBox())?.focus();
    } else {
      showBanner(banner, null, messageOf(error));
    }
  }

  form.addEventListener('change', (event) => {
    if (event.target instanceof HTMLInputElement && event.target.name === 'module') showModule();
  });

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearErrors();
    const request = readForm();
    if (!checkForm(request)) return;
    save.disabled = true;
    try {
      const created = await createKey(request);
      dialog.close();
      onCreated(created);
    } catch (error) {
      // The dialog stays as it is: a session that expired is renewed and the draft comes back.
      if (error instanceof ApiError && error.status === 401) onAuthError(error);
      else showServerError(error, request.module);
    } finally {
      save.disabled = false;
    }
  });

  find(dialog, '[data-close]').addEventListener('click', () => dialog.close());

  /** @param {CreateDraft} draft */
  function applyDraft(draft) {
    const radio = form.querySelector(`input[name="module"][value="${draft.module}"]`);
    if (radio instanceof HTMLInputElement) radio.checked = true;
    showModule();
    if (draft.module === 'bda') bdaSelect.value = draft.roles[0] ?? '';
    for (const box of platformList.querySelectorAll('input')) {
      if (box instanceof HTMLInputElement) box.checked = draft.roles.includes(box.value);
    }
    name.value = draft.name;
    expiry.value = draft.expiry;
  }

  return {
    /** What the user has filled in so far, if the dialog is open (kept across a new sign-in). */
    draft() {
      if (!dialog.open) return null;
      const { module, roles } = readForm();
      return { module, roles, name: name.value, expiry: expiry.value };
    },

    /** @param {CreateDraft | null} [draft] fields to fill in again */
    async open(draft = null) {
      form.reset();
      showModule();
      save.disabled = true;
      dialog.showModal();
      try {
        const [modules, identities] = await Promise.all([listModules(), listIdentities()]);
        fillRoles(modules.modules);
        identity.replaceChildren(
          el('option', { text: 'None', attrs: { value: '' } }),
          ...identities.items.map((i) =>
            el('option', {
              text: i.displayName ? `${i.name} — ${i.displayName}` : i.name,
              attrs: { value: i.name },
            }),
          ),
        );
        if (draft !== null) applyDraft(draft);
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) {
          onAuthError(error);
          return;
        }
        showBanner(banner, null, `The roles could not be loaded: ${messageOf(error)}`);
      } finally {
        save.disabled = false;
      }
      find(form, 'input[name="module"]:checked').focus();
    },
  };
}
