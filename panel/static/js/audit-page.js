// The "Audit log" page: events of the caller's keys, newest first, filtered by kind, paged.
import { listAudit } from './api.js';
import { actionLabel, detailText } from './audit-format.js';
import { $, el, labelCells } from './dom.js';
import { formatDateTime } from './format.js';

/** @typedef {import('./api.js').AuditEvent} AuditEvent */

/** @param {{ onError: (error: unknown) => void }} handlers */
export function createAuditPage({ onError }) {
  const body = $('audit-body');
  const table = $('audit-table');
  const empty = $('audit-empty');
  const more = $('audit-more');
  const count = $('audit-count');
  const action = $('audit-action', HTMLSelectElement);
  /** @type {AuditEvent[]} */
  let events = [];
  /** @type {string | null} */
  let nextCursor = null;
  let generation = 0;

  /** @param {{ append?: boolean }} [options] */
  async function load({ append = false } = {}) {
    const mine = ++generation;
    try {
      const cursor = append && nextCursor !== null ? nextCursor : undefined;
      const page = await listAudit({
        ...(action.value ? { action: action.value } : {}),
        ...(cursor === undefined ? {} : { cursor }),
      });
      if (mine !== generation) return;
      events = append ? events.concat(page.items) : page.items;
      nextCursor = page.nextCursor ?? null;
      render();
    } catch (error) {
      if (mine === generation) onError(error);
    }
  }

  /**
   * Which key, as its owner knows it: its name and first characters (the id, which tells a person
   * nothing, only in the tooltip and when neither was recorded).
   * @param {AuditEvent} e
   */
  function keyCell(e) {
    if (e.keyId === undefined)
      return [el('span', { className: 'audit-key', text: `identity ${e.identity ?? ''}` })];
    const parts = [];
    if (e.keyName) parts.push(el('span', { className: 'key-name', text: e.keyName }));
    if (e.keyStart) parts.push(el('span', { className: 'mono', text: `${e.keyStart}…` }));
    if (parts.length === 0) parts.push(el('span', { className: 'mono', text: e.keyId }));
    return [el('span', { className: 'audit-key', attrs: { title: `key id ${e.keyId}` } }, parts)];
  }

  /** @param {AuditEvent} e */
  function row(e) {
    return el('tr', { attrs: { 'data-action': e.action, 'data-key-id': e.keyId ?? '' } }, [
      el('td', {}, [el('time', { text: formatDateTime(e.at), attrs: { datetime: e.at } })]),
      el('td', { text: actionLabel(e.action) }),
      el('td', {}, keyCell(e)),
      el('td', { text: e.actor }),
      el('td', { className: 'mono', text: e.address ?? '' }),
      el('td', { text: detailText(e.detail) }),
    ]);
  }

  function render() {
    body.replaceChildren(...events.map(row));
    labelCells(body);
    table.hidden = events.length === 0;
    empty.hidden = events.length > 0;
    more.hidden = !nextCursor;
    count.textContent = `${events.length} event${events.length === 1 ? '' : 's'}${nextCursor ? ' shown' : ''}`;
  }

  action.addEventListener('change', () => load());
  $('audit-load-more').addEventListener('click', () => load({ append: true }));

  return { reload: () => load() };
}
