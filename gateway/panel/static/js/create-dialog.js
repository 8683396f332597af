// The "Create key" dialog: module, role(s), optional name and expiry. On success it hands the
// answer (which holds the key value, sent this once) to the reveal dialog and forgets it.
import { ApiError, createKey, listModules } from './api.js';
import { $, el, setFieldError, showBanner } from './dom.js';
import { endOfDayUtc } from './format.js';

export function createCreateDialog({ onCreated, onAuthError }) {
  const dialog = $('create-dialog');
  const form = $('create-form');
  const save = $('create-save');
  const bdaField = $('role-field-bda');
  const bdaSelect = $('role-bda');
  const platformField = $('role-field-platform');
  const platformList = $('role-platform');
  const name = $('key-name');
  const expiry = $('key-expiry');
  const banner = $('create-error');
  const errors = {
    bda: [bdaSelect, $('role-error-bda')],
    platform: [null, $('role-error-platform')],
    name: [name, $('name-error')],
    expiresAt: [expiry, $('expiry-error')],
  };

  const selectedModule = () => form.elements.module.value;

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
      : 'A workflow appears here once one of its services is registered with you as its owner (on a cluster: a Service labelled tollgate.dev/workflow, tollgate.dev/service and tollgate.dev/owner).';
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

  function readForm() {
    const module = selectedModule();
    const roles =
      module === 'bda'
        ? [bdaSelect.value].filter(Boolean)
        : [...platformList.querySelectorAll('input:checked')].map((box) => box.value);
    const request = { module, roles };
    if (name.value.trim()) request.name = name.value.trim();
    if (expiry.value) request.expiresAt = endOfDayUtc(expiry.value);
    return request;
  }

  /** Checks what the browser can; the server checks everything again and its word is final. */
  function checkForm(request) {
    if (request.roles.length > 0) return true;
    const [control, node] = errors[request.module];
    setFieldError(
      control,
      node,
      request.module === 'bda' ? 'Choose the workflow this key may call.' : 'Choose at least one role.',
    );
    (control ?? platformList.querySelector('input'))?.focus();
    return false;
  }

  function showServerError(error, module) {
    const target = error.field === 'roles' || error.field === 'role' ? module : error.field;
    const slot = errors[target];
    if (slot) {
      setFieldError(slot[0], slot[1], error.message);
      (slot[0] ?? platformList.querySelector('input'))?.focus();
    } else {
      showBanner(banner, null, error.message);
    }
  }

  form.addEventListener('change', (event) => {
    if (event.target.name === 'module') showModule();
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
      if (error instanceof ApiError && error.status === 401) {
        dialog.close();
        onAuthError(error);
      } else {
        showServerError(error, request.module);
      }
    } finally {
      save.disabled = false;
    }
  });

  dialog.querySelector('[data-close]').addEventListener('click', () => dialog.close());

  return {
    async open() {
      form.reset();
      showModule();
      save.disabled = true;
      dialog.showModal();
      try {
        fillRoles((await listModules()).modules);
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) {
          dialog.close();
          onAuthError(error);
          return;
        }
        showBanner(banner, null, `The roles could not be loaded: ${error.message}`);
      } finally {
        save.disabled = false;
      }
      form.querySelector('input[name="module"]:checked').focus();
    },
  };
}
