// The administrators' "All keys" page: every user's keys with their owner, searched on the server,
// with Revoke (one key) and Offboard (every key of the row's owner), each asked first.
import { adminDeleteKey, adminListKeys, offboardUser } from './api.js';
import { $, actionButton, el, labelCells, debounce } from './dom.js';
import { formatDate, formatRelative } from './format.js';

/**
 * @typedef {import('./api.js').OwnedKey} OwnedKey
 * @typedef {import('./confirm-dialog.js').Confirmation} Confirmation
 */

const SEARCH_DELAY_MS = 250;

/**
 * @param {{ onError: (error: unknown) => void; confirm: (action: Confirmation) => void;
 *   onDone: (message: string) => void }} handlers
 */
export function createAdminPage({ onError, confirm, onDone }) {
  const body = $('admin-body');
  const table = $('admin-table');
  const empty = $('admin-empty');
  const more = $('admin-more');
  const count = $('admin-count');
  const search = $('admin-search', HTMLInputElement);
  /** @type {OwnedKey[]} */
  let keys = [];
  /** @type {string | null} */
  let nextCursor = null;
  let generation = 0;

  /** @param {{ append?: boolean }} [options] */
  async function load({ append = false } = {}) {
    const mine = ++generation;
    try {
      const cursor = append && nextCursor !== null ? nextCursor : undefined;
      const page = await adminListKeys({
        search: search.value.trim(),
        ...(cursor === undefined ? {} : { cursor }),
      });
      if (mine !== generation) return;
      keys = append ? keys.concat(page.items) : page.items;
      nextCursor = page.nextCursor ?? null;
      render();
    } catch (error) {
      if (mine === generation) onError(error);
    }
  }

  /** @param {OwnedKey} key */
  const ownerLabel = (key) => key.ownerName ?? key.owner;

  /** @param {OwnedKey} key */
  function revoke(key) {
    const label = key.name ? `“${key.name}” (${key.start}…)` : `${key.start}…`;
    confirm({
      title: 'Revoke this key?',
      text: `Key ${label} of ${ownerLabel(key)} will stop working immediately for every program that uses it. The owner sees in their audit log that you revoked it.`,
      confirm: 'Revoke key',
      run: async () => {
        await adminDeleteKey(key.id);
        onDone(`Key ${key.start}… of ${ownerLabel(key)} was revoked.`);
        await load();
      },
    });
  }

  /** @param {OwnedKey} key */
  function offboard(key) {
    confirm({
      title: `Offboard ${ownerLabel(key)}?`,
      text: `Every API key of ${ownerLabel(key)} (${key.owner}) will stop working immediately. Use this when someone leaves; it cannot be undone.`,
      confirm: 'Revoke all their keys',
      run: async () => {
        const done = await offboardUser(key.owner);
        const n = done.revoked.length;
        onDone(`${ownerLabel(key)} was offboarded: ${n} key${n === 1 ? '' : 's'} revoked.`);
        await load();
      },
    });
  }

  /** @param {OwnedKey} key */
  function row(key) {
    return el('tr', { attrs: { 'data-key-id': key.id, 'data-owner': key.owner } }, [
      el('td', {}, [
        el('span', { text: ownerLabel(key) }),
        el('small', { className: 'mono muted owner-subject', text: key.owner, attrs: { title: key.owner } }),
      ]),
      el('td', {}, [
        el('span', { className: 'mono', text: `${key.start}…` }),
        el('small', { className: 'muted owner-subject', text: key.name ?? '' }),
      ]),
      el('td', {}, [
        el('span', { className: `badge badge-${key.module}`, text: key.module }),
        ...key.roles.map((role) => el('span', { className: 'badge', text: role })),
      ]),
      el('td', { className: 'col-created', text: key.createdAt ? formatDate(key.createdAt) : '' }),
      el('td', { text: key.lastUsed ? formatRelative(key.lastUsed) : 'Never' }),
      el('td', { className: 'row-actions' }, [
        actionButton('Revoke', `Revoke key ${key.start}… of ${ownerLabel(key)}`, () => revoke(key)),
        actionButton('Offboard', `Offboard ${ownerLabel(key)}`, () => offboard(key)),
      ]),
    ]);
  }

  function render() {
    body.replaceChildren(...keys.map(row));
    labelCells(body);
    table.hidden = keys.length === 0;
    empty.hidden = keys.length > 0;
    $('admin-empty-title').textContent = search.value.trim() ? 'No keys match your search' : 'No API keys';
    more.hidden = !nextCursor;
    count.textContent = `${keys.length} key${keys.length === 1 ? '' : 's'}${nextCursor ? ' shown' : ''}`;
  }

  search.addEventListener(
    'input',
    debounce(() => load(), SEARCH_DELAY_MS),
  );
  $('admin-load-more').addEventListener('click', () => load({ append: true }));

  return { reload: () => load() };
}
