// The "API keys" page: the caller's keys in a table with a day's usage per row, a server-side
// search, paging, and the actions on a key (details, roll, delete).
import { keyUsage, listAudit, listKeys } from './api.js';
import { sparkline } from './chart.js';
import { $, actionButton, el, labelCells, debounce } from './dom.js';
import { formatDate, formatDateTime, formatRelative } from './format.js';

/** @typedef {import('./api.js').KeySummary} KeySummary */

const SEARCH_DELAY_MS = 250;

/**
 * @param {{ onError: (error: unknown) => void; onDelete: (key: KeySummary) => void;
 *   onRoll: (key: KeySummary) => void; onDetails: (key: KeySummary) => void }} handlers
 */
export function createKeysPage({ onError, onDelete, onRoll, onDetails }) {
  const body = $('keys-body');
  const table = $('keys-table');
  const empty = $('keys-empty');
  const loading = $('keys-loading');
  const more = $('keys-more');
  const count = $('key-count');
  const search = $('search', HTMLInputElement);

  /** @type {KeySummary[]} */
  let keys = [];
  /** @type {string | null} */
  let nextCursor = null;
  /** @type {Set<string>} ids of keys the audit trail says were reported leaked */
  let leaked = new Set();
  // Answers to an older search may arrive after a newer one's: only the latest is drawn.
  let generation = 0;

  /** @param {{ append?: boolean }} [options] */
  async function load({ append = false } = {}) {
    const mine = ++generation;
    loading.hidden = append || keys.length > 0;
    try {
      const cursor = append && nextCursor !== null ? nextCursor : undefined;
      const [page, leaks] = await Promise.all([
        listKeys({ search: search.value.trim(), ...(cursor === undefined ? {} : { cursor }) }),
        // Keys reported leaked and kept working (reportOnly): marked in the list. Without an audit
        // trail there is nothing to mark.
        listAudit({ action: 'key.leaked', limit: 100 }).catch(() => ({ items: [] })),
      ]);
      leaked = new Set(leaks.items.flatMap((e) => (e.keyId === undefined ? [] : [e.keyId])));
      if (mine !== generation) return;
      keys = append ? keys.concat(page.items) : page.items;
      nextCursor = page.nextCursor ?? null;
      render();
    } catch (error) {
      if (mine === generation) onError(error);
    } finally {
      if (mine === generation) loading.hidden = true;
    }
  }

  function render() {
    body.replaceChildren(...keys.map(row));
    labelCells(body);
    const searching = search.value.trim() !== '';
    table.hidden = keys.length === 0;
    empty.hidden = keys.length > 0;
    $('keys-empty-title').textContent = searching ? 'No keys match your search' : 'No API keys yet';
    $('keys-empty-text').textContent = searching
      ? 'Search matches a key’s name, its first characters, its module and its roles.'
      : 'Create a key to call workflow services or platform resources.';
    more.hidden = !nextCursor;
    const shown = `${keys.length} key${keys.length === 1 ? '' : 's'}${nextCursor ? ' shown' : ''}`;
    count.textContent = searching ? `${shown} matching “${search.value.trim()}”` : shown;
    count.hidden = keys.length === 0 && !searching;
  }

  /** @param {KeySummary} key */
  function stateCell(key) {
    if (key.state === 'rolled' && key.rolled) {
      return el('time', {
        className: 'rolled',
        text: `Rolled · stops ${formatRelative(key.rolled.graceEndsAt)}`,
        attrs: {
          datetime: key.rolled.graceEndsAt,
          title: `Replaced by ${key.rolled.to}; works until ${formatDateTime(key.rolled.graceEndsAt)}`,
        },
      });
    }
    const ends = key.rolled?.graceEndsAt ?? key.expiresAt;
    if (key.state === 'expired' && ends) {
      return el('time', {
        className: 'expired',
        text: key.rolled ? `Rolled, stopped ${formatDate(ends)}` : `Expired ${formatDate(ends)}`,
        attrs: { datetime: ends, title: formatDateTime(ends) },
      });
    }
    return key.expiresAt
      ? el('time', {
          text: formatDate(key.expiresAt),
          attrs: { datetime: key.expiresAt, title: formatDateTime(key.expiresAt) },
        })
      : el('span', { className: 'muted', text: 'Never' });
  }

  /** @param {KeySummary} key */
  function usageCell(key) {
    const hours = key.requestsPerHour ?? [];
    const day = hours.reduce((n, v) => n + v, 0);
    return el('div', { className: 'usage-cell' }, [
      sparkline(hours, { label: `${day} requests in the last 24 hours`, width: 72 }),
      el('span', { className: 'muted usage-total', text: `${day}` }),
    ]);
  }

  /**
   * What the key may still spend, when it has limits, credits or an identity: filled in from its
   * usage (the counters the gateways count in), once the row is drawn.
   * @param {KeySummary} key
   */
  function budgetCell(key) {
    const limited =
      key.rateLimit !== undefined ||
      (key.limits ?? []).length > 0 ||
      key.credits !== undefined ||
      key.identity;
    if (!limited) return [];
    const cell = el('span', { className: 'muted budget', text: '…' });
    keyUsage(key.id).then(
      (usage) => {
        const parts = [
          ...(usage.credits ? [`${usage.credits.remaining} credits left`] : []),
          ...(usage.limits ?? []).map((l) => `${l.name ?? 'rate'} ${l.used}/${l.requests}`),
          ...(key.identity ? [`identity ${key.identity}`] : []),
          ...(usage.identityCredits ? [`${usage.identityCredits.remaining} shared credits left`] : []),
        ];
        cell.textContent = parts.join(' · ');
      },
      () => (cell.textContent = 'What it may still spend is not known now'),
    );
    return [cell];
  }

  /** @param {KeySummary} key */
  function row(key) {
    const label = key.name || 'Unnamed key';
    const named = `${label} (${key.start}…)`;
    const actions = [actionButton('Details', `Details of key ${named}`, () => onDetails(key))];
    // A rolled or expired key cannot be rolled again; it can still be looked at and deleted.
    if ((key.state ?? 'active') === 'active')
      actions.push(actionButton('Roll', `Roll key ${named}`, () => onRoll(key)));
    actions.push(actionButton('Delete', `Delete key ${named}`, () => onDelete(key)));
    return el('tr', { attrs: { 'data-key-id': key.id, 'data-state': key.state ?? 'active' } }, [
      el('td', {}, [
        el('span', { className: key.name ? 'key-name' : 'key-name unnamed', text: label }),
        ...(leaked.has(key.id)
          ? [el('span', { className: 'badge badge-leaked', text: 'Reported leaked' })]
          : []),
        ...(key.rolledFrom
          ? [el('span', { className: 'muted link-note', text: ` replaces ${key.rolledFrom.slice(0, 8)}…` })]
          : []),
        // Under its name, so the table keeps its width: what a limited key may still spend.
        ...budgetCell(key),
      ]),
      el('td', { className: 'mono', text: `${key.start}…` }),
      el('td', {}, [el('span', { className: `badge badge-${key.module}`, text: key.module })]),
      el(
        'td',
        {},
        key.roles.map((role) => el('span', { className: 'badge', text: role })),
      ),
      el('td', { className: 'col-created' }, [
        el('time', {
          text: formatDate(key.createdAt),
          attrs: { datetime: key.createdAt ?? '', title: formatDateTime(key.createdAt) },
        }),
      ]),
      el('td', {}, [
        key.lastUsed
          ? el('time', {
              text: formatRelative(key.lastUsed),
              attrs: { datetime: key.lastUsed, title: formatDateTime(key.lastUsed) },
            })
          : el('span', { className: 'muted', text: 'Never' }),
      ]),
      el('td', {}, [usageCell(key)]),
      el('td', {}, [stateCell(key)]),
      el('td', { className: 'row-actions' }, actions),
    ]);
  }

  search.addEventListener(
    'input',
    debounce(() => load(), SEARCH_DELAY_MS),
  );
  $('load-more').addEventListener('click', () => load({ append: true }));

  return {
    reload: () => load(),
    /** Drops a deleted key at once, without waiting for a reload. */
    /** @param {string} id */
    remove(id) {
      keys = keys.filter((key) => key.id !== id);
      render();
    },
    focusSearch: () => search.focus(),
  };
}
