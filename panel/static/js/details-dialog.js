// A key's details: its facts, its usage per minute (24 h) and per hour (30 days), its busiest
// endpoints and its recent events.
import { ApiError, keyUsage, listAudit } from './api.js';
import { actionLabel, detailText } from './audit-format.js';
import { usageChart } from './chart.js';
import { $, el, find, messageOf, showBanner } from './dom.js';
import { formatDateTime } from './format.js';

/** @typedef {import('./api.js').KeySummary} KeySummary */

const minuteLabel = (/** @type {string} */ at) =>
  new Date(at).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
const hourLabel = (/** @type {string} */ at) =>
  new Date(at).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit' });

/** @param {{ onAuthError: (error: ApiError) => void }} handlers */
export function createDetailsDialog({ onAuthError }) {
  const dialog = $('details-dialog', HTMLDialogElement);
  const banner = $('details-error');
  let generation = 0;

  find(dialog, '[data-close]').addEventListener('click', () => dialog.close());

  /**
   * @param {string} term
   * @param {string} value
   */
  const fact = (term, value) => [el('dt', { text: term }), el('dd', { text: value })];

  /** @param {NonNullable<import('./api.js').KeyUsage['limits']>} limits */
  const windows = (limits) =>
    limits
      .map(
        (l) =>
          `${l.name ?? 'rate limit'}: ${l.used} of ${l.requests} used this ${l.windowSeconds} s window, next window ${formatDateTime(l.resetsAt)}`,
      )
      .join('; ');

  /** @param {NonNullable<import('./api.js').KeyUsage['credits']>} c */
  const creditsText = (c) =>
    `${c.remaining} left (${c.amount}${c.refill ? ` a ${c.refill === 'daily' ? 'day' : 'month'}` : ' in all'})${
      c.refillsAt ? `; next refill ${formatDateTime(c.refillsAt)}` : ''
    }`;

  /** @param {KeySummary} key */
  function facts(key) {
    return [
      ...fact('Key', `${key.start}… (id ${key.id})`),
      ...fact('Module', key.module),
      ...fact('Roles', key.roles.join(', ')),
      ...fact('Networks', key.allowedCidrs?.join(', ') ?? 'Any'),
      ...fact(
        'Limits',
        [
          ...(key.rateLimit ? [`${key.rateLimit.requests} per ${key.rateLimit.windowSeconds} s`] : []),
          ...(key.limits ?? []).map((l) => `${l.name}: ${l.requests} per ${l.windowSeconds} s`),
        ].join(', ') || 'None',
      ),
      ...(key.identity
        ? fact('Identity', `${key.identity} (its limits and credits are shared with its other keys)`)
        : []),
      ...(key.module === 'platform' ? fact('Models', key.models?.join(', ') ?? 'Any its roles allow') : []),
      ...(key.rolledFrom ? fact('Replaces', key.rolledFrom) : []),
      ...(key.rolled
        ? fact('Rolled', `to ${key.rolled.to}; works until ${formatDateTime(key.rolled.graceEndsAt)}`)
        : []),
    ];
  }

  return {
    /** @param {KeySummary} key */
    async open(key) {
      const mine = ++generation;
      $('details-title').textContent = key.name || 'Unnamed key';
      $('details-facts').replaceChildren(...facts(key));
      for (const id of ['details-minutes', 'details-hours', 'details-endpoints', 'details-events']) {
        $(id).replaceChildren(el('span', { className: 'muted', text: 'Loading…' }));
      }
      showBanner(banner, null, null);
      const leakedNote = $('details-leaked');
      leakedNote.hidden = true;
      dialog.showModal();
      try {
        const [usage, events] = await Promise.all([
          keyUsage(key.id),
          listAudit({ keyId: key.id, limit: 20 }),
        ]);
        if (mine !== generation) return;
        $('details-facts').append(
          ...fact('Requests', `${usage.requestCount} (${usage.refusalCount} refused)`),
          ...fact('Rows sent', `${usage.rowCount} (of its inference batches)`),
          ...fact('Last used', usage.lastUsed ? formatDateTime(usage.lastUsed) : 'Never'),
          ...(usage.credits ? fact('Credits', creditsText(usage.credits)) : []),
          ...(usage.limits ? fact('Windows now', windows(usage.limits)) : []),
          ...(usage.identityCredits ? fact('Identity’s credits', creditsText(usage.identityCredits)) : []),
          ...(usage.identityLimits ? fact('Identity’s windows now', windows(usage.identityLimits)) : []),
        );
        // Reported leaked: the trail says where it was found and what was done.
        const leak = events.items.find((e) => e.action === 'key.leaked');
        if (leak !== undefined) {
          leakedNote.textContent = `Reported leaked ${formatDateTime(leak.at)}${leak.detail ? `: ${detailText(leak.detail)}` : ''}. Anyone who found it may use it: roll or delete it.`;
          leakedNote.hidden = false;
        }
        $('details-minutes').replaceChildren(
          usageChart(usage.perMinute, { label: 'Requests per minute, last 24 hours', bucket: minuteLabel }),
        );
        $('details-hours').replaceChildren(
          usageChart(usage.perHour, { label: 'Requests per hour, last 30 days', bucket: hourLabel }),
        );
        $('details-endpoints').replaceChildren(
          ...(usage.topEndpoints.length === 0
            ? [el('li', { className: 'muted', text: 'No calls yet' })]
            : usage.topEndpoints.map((e) =>
                el('li', {}, [el('code', { text: e.endpoint }), ` ${e.requests}`]),
              )),
        );
        $('details-events').replaceChildren(
          ...(events.items.length === 0
            ? [el('li', { className: 'muted', text: 'No events' })]
            : events.items.map((e) =>
                el('li', { attrs: { 'data-action': e.action } }, [
                  el('time', { text: formatDateTime(e.at), attrs: { datetime: e.at } }),
                  ` ${actionLabel(e.action)} by ${e.actor}${e.address ? ` from ${e.address}` : ''}`,
                  e.detail ? ` (${detailText(e.detail)})` : '',
                ]),
              )),
        );
      } catch (error) {
        if (mine !== generation) return;
        if (error instanceof ApiError && error.status === 401) {
          dialog.close();
          onAuthError(error);
          return;
        }
        // The audit store may be unreachable while usage is not: say so, keep what was drawn.
        showBanner(banner, null, messageOf(error));
      }
    },
  };
}
