// The "Webhooks" page: the caller's endpoints (an administrator's: everyone's, and whether one
// takes every user's events) with their last delivery; registering one (its signing secret shown
// once, as a key is); its deliveries by status, a failed one sent again; the secret rotated; the
// endpoint removed.
import {
  ApiError,
  createWebhook,
  deleteWebhook,
  listDeliveries,
  listWebhooks,
  replayDelivery,
  rotateWebhookSecret,
} from './api.js';
import { $, actionButton, el, find, labelCells, setFieldError, showBanner } from './dom.js';
import { formatDateTime } from './format.js';

/** @typedef {import('./api.js').Webhook} Webhook */
/** @typedef {import('./api.js').Delivery} Delivery */
/** @typedef {import('./api.js').CreateWebhookRequest} CreateWebhookRequest */

/** The events an endpoint may ask for, as the API names them, with what each means. */
const EVENTS = /** @type {const} */ ([
  ['key.created', 'A key was created'],
  ['key.rolled', 'A key was rolled'],
  ['key.revoked', 'A key was revoked'],
  ['key.offboarded', 'A user was offboarded'],
  ['key.expiring', 'A key expires soon'],
  ['key.leaked', 'A key was found leaked'],
  ['key.rate_limited', 'A key hit a limit'],
  ['credits.low', 'Credits are low'],
  ['credits.exhausted', 'Credits ran out'],
  ['usage.minute', 'Usage of each minute, for billing'],
]);

/**
 * @param {{ onError: (error: unknown) => void; isAdmin: () => boolean;
 *   confirm: (action: import('./confirm-dialog.js').Confirmation) => void;
 *   reveal: (endpoint: { url: string; secret: string }) => void }} handlers
 */
export function createWebhooksPage({ onError, isAdmin, confirm, reveal }) {
  const body = $('webhooks-body');
  const table = $('webhooks-table');
  const empty = $('webhooks-empty');
  const loading = $('webhooks-loading');
  const dialog = $('webhook-dialog', HTMLDialogElement);
  const form = $('webhook-form', HTMLFormElement);
  const banner = $('webhook-error');
  const url = $('webhook-url', HTMLInputElement);
  const description = $('webhook-description', HTMLInputElement);
  const events = $('webhook-events');
  const all = $('webhook-all', HTMLInputElement);
  const deliveries = $('deliveries-dialog', HTMLDialogElement);
  const statusFilter = $('deliveries-status', HTMLSelectElement);
  /** @type {Webhook | null} */
  let showing = null;

  events.replaceChildren(
    ...EVENTS.map(([type, meaning]) =>
      el('label', { className: 'check' }, [
        el('input', { attrs: { type: 'checkbox', name: 'event', value: type } }),
        el('span', {}, [el('code', { text: type }), ` ${meaning}`]),
      ]),
    ),
  );

  async function load() {
    loading.hidden = false;
    try {
      const { items } = await listWebhooks();
      // Each endpoint's newest delivery, asked for all at once.
      const last = await Promise.all(
        items.map((w) =>
          listDeliveries(w.id, { limit: 1 }).then(
            (d) => d.items[0],
            () => undefined,
          ),
        ),
      );
      body.replaceChildren(...items.map((w, i) => row(w, last[i])));
      labelCells(body);
      table.hidden = items.length === 0;
      empty.hidden = items.length > 0;
    } catch (error) {
      onError(error);
    } finally {
      loading.hidden = true;
    }
  }

  /**
   * @param {Webhook} webhook
   * @param {Delivery | undefined} last
   */
  function row(webhook, last) {
    const name = webhook.description ?? webhook.url;
    return el('tr', {}, [
      el('td', {}, [
        el('span', { className: 'key-name', text: name }),
        ...(webhook.description === undefined
          ? []
          : [el('br'), el('code', { className: 'muted', text: webhook.url })]),
      ]),
      el('td', { text: webhook.events.join(', ') }),
      el('td', {
        text:
          webhook.allOwners === true
            ? 'Every user’s events'
            : isAdmin()
              ? `${webhook.owner}’s keys`
              : 'Your keys',
      }),
      el('td', {
        text:
          last === undefined
            ? 'None yet'
            : `${last.type}: ${last.status}${last.lastStatus === undefined ? '' : ` (HTTP ${last.lastStatus})`}, ${formatDateTime(last.createdAt)}`,
      }),
      el('td', { className: 'actions' }, [
        actionButton('Deliveries', `Deliveries to ${name}`, () => void openDeliveries(webhook)),
        actionButton('Rotate secret', `Rotate secret of ${name}`, () =>
          confirm({
            title: 'Rotate the signing secret?',
            text: `The old secret stops at once: ${webhook.url} must check deliveries with the new one.`,
            confirm: 'Rotate secret',
            run: async () => {
              const rotated = await rotateWebhookSecret(webhook.id);
              reveal(rotated);
            },
          }),
        ),
        actionButton('Delete', `Delete the endpoint ${name}`, () =>
          confirm({
            title: 'Delete this endpoint?',
            text: `${webhook.url} hears of no more events; deliveries not yet made are dropped.`,
            confirm: 'Delete endpoint',
            run: async () => {
              await deleteWebhook(webhook.id);
              await load();
            },
          }),
        ),
      ]),
    ]);
  }

  /** @param {Webhook} webhook */
  async function openDeliveries(webhook) {
    showing = webhook;
    statusFilter.value = '';
    $('deliveries-title').textContent = `Deliveries to ${webhook.description ?? webhook.url}`;
    deliveries.showModal();
    await drawDeliveries();
  }

  async function drawDeliveries() {
    const webhook = showing;
    if (webhook === null) return;
    const errorBanner = $('deliveries-error');
    showBanner(errorBanner, null, null);
    try {
      const status = /** @type {Delivery['status'] | ''} */ (statusFilter.value);
      const { items } = await listDeliveries(webhook.id, { ...(status === '' ? {} : { status }), limit: 50 });
      const rows = $('deliveries-body');
      rows.replaceChildren(
        ...items.map((d) =>
          el('tr', {}, [
            el('td', {}, [el('code', { text: d.type })]),
            el('td', {}, [el('span', { className: `badge badge-${d.status}`, text: d.status })]),
            el('td', { text: String(d.attempts) }),
            el('td', {
              text:
                d.lastStatus === undefined && d.lastError === undefined
                  ? '–'
                  : [d.lastStatus === undefined ? '' : `HTTP ${d.lastStatus}`, d.lastError ?? '']
                      .filter((s) => s !== '')
                      .join(': '),
            }),
            el('td', { text: formatDateTime(d.createdAt) }),
            el(
              'td',
              { className: 'actions' },
              d.status === 'failed'
                ? [
                    actionButton(
                      'Send again',
                      `Send again: the ${d.type} delivery of ${formatDateTime(d.createdAt)}`,
                      async () => {
                        try {
                          await replayDelivery(webhook.id, d.id);
                          await drawDeliveries();
                        } catch (error) {
                          showFailure(errorBanner, error);
                        }
                      },
                    ),
                  ]
                : [],
            ),
          ]),
        ),
      );
      labelCells(rows);
      $('deliveries-empty').hidden = items.length > 0;
      $('deliveries-table').hidden = items.length === 0;
    } catch (error) {
      showFailure(errorBanner, error);
    }
  }

  /**
   * @param {HTMLElement} where
   * @param {unknown} error
   */
  function showFailure(where, error) {
    if (error instanceof ApiError && error.status !== 401)
      showBanner(where, null, `${error.message} (${error.code})`);
    else onError(error);
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    showBanner(banner, null, null);
    setFieldError(url, $('webhook-url-error'), null);
    setFieldError(description, $('webhook-description-error'), null);
    setFieldError(null, $('webhook-events-error'), null);
    const chosen = [...events.querySelectorAll('input:checked')].map(
      (i) => /** @type {HTMLInputElement} */ (i).value,
    );
    /** @type {CreateWebhookRequest} */
    const request = { url: url.value.trim(), events: /** @type {CreateWebhookRequest['events']} */ (chosen) };
    if (description.value.trim() !== '') request.description = description.value.trim();
    if (all.checked) request.allOwners = true;
    try {
      const made = await createWebhook(request);
      dialog.close();
      reveal(made);
      await load();
    } catch (error) {
      if (!(error instanceof ApiError) || error.status === 401) {
        dialog.close();
        onError(error);
        return;
      }
      const field = error.field ?? '';
      // The server's words say what to fix; its code is what to look up.
      const said = `${error.message} (${error.code})`;
      if (field === 'url') setFieldError(url, $('webhook-url-error'), said);
      else if (field === 'description') setFieldError(description, $('webhook-description-error'), said);
      else if (field.startsWith('events')) setFieldError(null, $('webhook-events-error'), said);
      else showBanner(banner, null, `${error.message} (${error.code})`);
    }
  });
  statusFilter.addEventListener('change', () => void drawDeliveries());
  find(dialog, '[data-close]').addEventListener('click', () => dialog.close());
  find(deliveries, '[data-close]').addEventListener('click', () => deliveries.close());
  $('webhook-create-open').addEventListener('click', () => {
    form.reset();
    showBanner(banner, null, null);
    $('webhook-all-field').hidden = !isAdmin();
    dialog.showModal();
    url.focus();
  });

  return { load };
}
