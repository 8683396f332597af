// The "Identities" page: the caller's identities (an administrator's: everyone's) with their keys,
// named limits and credits left; making and deleting one; administrators change its limits and top
// up its credits. A refusal is shown where it belongs: a field's next to it, anything else in the
// dialog's banner or the page's.
import {
  addIdentityCredits,
  ApiError,
  createIdentity,
  deleteIdentity,
  getIdentity,
  listIdentities,
  listKeys,
  setIdentityLimits,
} from './api.js';
import { $, actionButton, el, find, labelCells, setFieldError, showBanner } from './dom.js';
import { formatDateTime } from './format.js';

/** @typedef {import('./api.js').Identity} Identity */
/** @typedef {import('./api.js').CreateIdentityRequest} CreateIdentityRequest */

/**
 * @param {{ onError: (error: unknown) => void; isAdmin: () => boolean;
 *   confirm: (action: import('./confirm-dialog.js').Confirmation) => void }} handlers
 */
export function createIdentitiesPage({ onError, isAdmin, confirm }) {
  const body = $('identities-body');
  const table = $('identities-table');
  const empty = $('identities-empty');
  const loading = $('identities-loading');
  const dialog = $('identity-dialog', HTMLDialogElement);
  const form = $('identity-form', HTMLFormElement);
  const banner = $('identity-error');
  const topup = $('topup-dialog', HTMLDialogElement);
  /** @type {Identity | null} the identity whose limits are being changed; null: a new one */
  let editing = null;
  /** @type {Identity | null} */
  let toppingUp = null;
  /** @type {Map<string, string[]>} the names of the caller's own keys of each identity */
  let keyNames = new Map();

  const fields = {
    name: $('identity-name', HTMLInputElement),
    display: $('identity-display', HTMLInputElement),
    limitName: $('identity-limit-name', HTMLInputElement),
    limitRequests: $('identity-limit-requests', HTMLInputElement),
    limitWindow: $('identity-limit-window', HTMLInputElement),
    credits: $('identity-credits', HTMLInputElement),
    refill: $('identity-refill', HTMLSelectElement),
  };
  const errors = {
    name: $('identity-name-error'),
    displayName: $('identity-display-error'),
    limits: $('identity-limits-error'),
    credits: $('identity-credits-error'),
  };

  async function load() {
    loading.hidden = false;
    try {
      // A listing counts no keys: each identity's own answer does.
      const [{ items }, keys] = await Promise.all([listIdentities(), listKeys({})]);
      keyNames = new Map();
      for (const key of keys.items) {
        if (key.identity === undefined) continue;
        keyNames.set(key.identity, [...(keyNames.get(key.identity) ?? []), key.name ?? `${key.start}…`]);
      }
      render(await Promise.all(items.map((i) => getIdentity(i.name).catch(() => i))));
    } catch (error) {
      onError(error);
    } finally {
      loading.hidden = true;
    }
  }

  /** @param {Identity[]} items */
  function render(items) {
    body.replaceChildren(...items.map(row));
    labelCells(body);
    table.hidden = items.length === 0;
    empty.hidden = items.length > 0;
  }

  /** @param {Identity} identity */
  function row(identity) {
    const label = identity.displayName ?? identity.name;
    const limits = (identity.limits ?? []).map((l) => `${l.name}: ${l.requests} per ${l.windowSeconds} s`);
    const credits = identity.credits;
    const actions = [
      actionButton('Delete', `Delete identity ${label}`, () =>
        confirm({
          title: `Delete identity ${label}?`,
          text: 'Its limits and credits go with it. An identity that still has keys is kept: delete or move its keys first.',
          confirm: 'Delete identity',
          run: async () => {
            await deleteIdentity(identity.name);
            await load();
          },
        }),
      ),
    ];
    if (isAdmin()) {
      actions.unshift(
        actionButton('Limits', `Change the limits and credits of ${label}`, () => openEdit(identity)),
        actionButton('Top up', `Top up the credits of ${label}`, () => openTopUp(identity)),
      );
    }
    return el('tr', {}, [
      el('td', {}, [
        el('span', { className: 'key-name', text: label }),
        ...(identity.displayName === undefined
          ? []
          : [el('code', { className: 'muted', text: ` ${identity.name}` })]),
      ]),
      el('td', { text: identity.ownerName ?? identity.owner }),
      el('td', {
        text: [
          identity.keys === undefined ? '–' : String(identity.keys),
          ...(keyNames.has(identity.name) ? [`: ${(keyNames.get(identity.name) ?? []).join(', ')}`] : []),
        ].join(''),
      }),
      el('td', { text: limits.length === 0 ? 'None' : limits.join('; ') }),
      el('td', {
        text: credits === undefined ? 'No credits' : `${credits.remaining} of ${credits.amount}`,
      }),
      el('td', {
        text:
          credits?.refillsAt === undefined
            ? credits?.refill === undefined
              ? '–'
              : credits.refill
            : `${formatDateTime(credits.refillsAt)} (${credits.refill ?? ''})`,
      }),
      el('td', { text: usageText(identity.usage) }),
      el('td', { className: 'actions' }, actions),
    ]);
  }

  function clearErrors() {
    showBanner(banner, null, null);
    setFieldError(fields.name, errors.name, null);
    setFieldError(fields.display, errors.displayName, null);
    setFieldError(fields.limitName, errors.limits, null);
    setFieldError(fields.credits, errors.credits, null);
  }

  /** @param {Identity | null} identity null: a new identity */
  function open(identity) {
    editing = identity;
    form.reset();
    clearErrors();
    $('identity-naming').hidden = identity !== null;
    $('identity-dialog-title').textContent =
      identity === null
        ? 'Create an identity'
        : `Limits and credits of ${identity.displayName ?? identity.name}`;
    $('identity-submit').textContent = identity === null ? 'Create identity' : 'Save';
    const limit = identity?.limits?.[0];
    if (limit !== undefined) {
      fields.limitName.value = limit.name;
      fields.limitRequests.value = String(limit.requests);
      fields.limitWindow.value = String(limit.windowSeconds);
    }
    if (identity?.credits !== undefined) {
      fields.credits.value = String(identity.credits.amount);
      fields.refill.value = identity.credits.refill ?? '';
    }
    dialog.showModal();
    (identity === null ? fields.name : fields.limitName).focus();
  }

  /** @param {Identity} identity */
  function openEdit(identity) {
    open(identity);
  }

  /** @param {Identity} identity */
  function openTopUp(identity) {
    toppingUp = identity;
    $('topup-form', HTMLFormElement).reset();
    showBanner($('topup-error'), null, null);
    $('topup-text').textContent =
      `Credits are added to what ${identity.displayName ?? identity.name}'s keys have left now.`;
    topup.showModal();
    $('topup-amount', HTMLInputElement).focus();
  }

  /** What the form asks for; a field the user left empty is left out (or removed, when editing). */
  function request() {
    const limitGiven = [fields.limitName, fields.limitRequests, fields.limitWindow].some(
      (f) => f.value.trim() !== '',
    );
    const limits = limitGiven
      ? [
          {
            name: fields.limitName.value.trim(),
            requests: Number(fields.limitRequests.value),
            windowSeconds: Number(fields.limitWindow.value),
          },
        ]
      : undefined;
    const credits =
      fields.credits.value.trim() === ''
        ? undefined
        : {
            amount: Number(fields.credits.value),
            ...(fields.refill.value === ''
              ? {}
              : { refill: /** @type {'daily' | 'monthly'} */ (fields.refill.value) }),
          };
    return { limits, credits };
  }

  /** @param {unknown} error */
  function showFailure(error) {
    if (!(error instanceof ApiError) || error.status === 401) {
      dialog.close();
      onError(error);
      return;
    }
    const field = error.field ?? '';
    // The server's words say what to fix; its code is what to look up.
    const said = `${error.message} (${error.code})`;
    if (field === 'name') setFieldError(fields.name, errors.name, said);
    else if (field === 'displayName') setFieldError(fields.display, errors.displayName, said);
    else if (field.startsWith('limits')) setFieldError(fields.limitName, errors.limits, said);
    else if (field.startsWith('credits')) setFieldError(fields.credits, errors.credits, said);
    else showBanner(banner, null, `${error.message} (${error.code})`);
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearErrors();
    const { limits, credits } = request();
    try {
      if (editing === null) {
        /** @type {CreateIdentityRequest} */
        const made = { name: fields.name.value.trim() };
        if (fields.display.value.trim() !== '') made.displayName = fields.display.value.trim();
        if (limits !== undefined) made.limits = limits;
        if (credits !== undefined) made.credits = credits;
        await createIdentity(made);
      } else {
        // What the form leaves empty is removed: the form shows the identity's whole setting.
        await setIdentityLimits(editing.name, { limits: limits ?? null, credits: credits ?? null });
      }
      dialog.close();
      await load();
    } catch (error) {
      showFailure(error);
    }
  });
  find(dialog, '[data-close]').addEventListener('click', () => dialog.close());

  $('topup-form', HTMLFormElement).addEventListener('submit', async (event) => {
    event.preventDefault();
    const identity = toppingUp;
    if (identity === null) return;
    try {
      await addIdentityCredits(identity.name, Number($('topup-amount', HTMLInputElement).value));
      topup.close();
      await load();
    } catch (error) {
      if (error instanceof ApiError && error.status !== 401)
        showBanner($('topup-error'), null, `${error.message} (${error.code})`);
      else {
        topup.close();
        onError(error);
      }
    }
  });
  find(topup, '[data-close]').addEventListener('click', () => topup.close());
  $('identity-create-open').addEventListener('click', () => open(null));

  return { load };
}

/**
 * What an identity's keys have done: calls, refusals and the rows of their inference batches.
 * @param {Identity['usage']} usage
 */
function usageText(usage) {
  if (usage === undefined) return '–';
  const rows = usage.rows === 0 ? '' : `, ${usage.rows} row${usage.rows === 1 ? '' : 's'}`;
  return `${usage.requests} call${usage.requests === 1 ? '' : 's'}${rows} (${usage.refusals} refused)`;
}
