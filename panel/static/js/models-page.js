// The "Models" page: each Model with its phase, replicas, versions and their traffic, the
// condition that says what to fix, its calls, errors and latency over the last hour (every
// gateway replica's), and a call built from its declared inputs, ready to paste.
import { listModels } from './api.js';
import { sparkline } from './chart.js';
import { $, el } from './dom.js';

/** @typedef {import('./api.js').ModelSummary} ModelSummary */

// The panel is served at `<base>/panel/`: models answer at `<base>/v2/models/<name>/infer`.
const GATEWAY = new URL('../../', import.meta.url);

/**
 * The curl command for a model's example request; the key comes from the environment.
 * @param {ModelSummary} model
 */
export function exampleCall(model) {
  const body = JSON.stringify(model.exampleRequest ?? { inputs: [] });
  return (
    `curl -s ${new URL(`v2/models/${model.name}/infer`, GATEWAY).href} \\\n` +
    `  -H "Authorization: Apikey $TOLLGATE_KEY" -H 'Content-Type: application/json' \\\n` +
    `  -d '${body.replaceAll("'", "'\\''")}'`
  );
}

/** @param {{ onError: (error: unknown) => void }} handlers */
export function createModelsPage({ onError }) {
  const list = $('models-list');
  const empty = $('models-empty');
  const count = $('models-count');
  let generation = 0;

  /** @param {ModelSummary} model */
  function card(model) {
    const sum = (/** @type {'calls' | 'errors'} */ field) =>
      model.perMinute.reduce((n, p) => n + p[field], 0);
    const calls = sum('calls');
    const errors = sum('errors');
    const busy = model.perMinute.filter((p) => p.calls > 0);
    const latency = busy.length === 0 ? 0 : busy.reduce((n, p) => n + p.meanLatencyMs, 0) / busy.length;
    const copy = el('button', {
      className: 'btn btn-secondary btn-small',
      text: 'Copy',
      attrs: { type: 'button' },
    });
    const command = exampleCall(model);
    copy.addEventListener('click', () => void navigator.clipboard?.writeText(command));
    return el(
      'article',
      { className: 'card model-card', attrs: { 'data-model': model.name, 'data-phase': model.phase } },
      [
        el('header', { className: 'model-head' }, [
          el('h2', { className: 'mono', text: model.name }),
          el('span', { className: `badge phase phase-${model.phase.toLowerCase()}`, text: model.phase }),
          el('span', { className: 'muted', text: `${model.readyReplicas}/${model.replicas} ready` }),
          ...(model.workflow
            ? [el('span', { className: 'badge badge-bda', text: `workflow ${model.workflow}` })]
            : []),
        ]),
        ...(model.message
          ? [el('p', { className: 'model-problem', attrs: { role: 'status' }, text: model.message })]
          : []),
        el('dl', { className: 'facts' }, [
          el('dt', { text: 'Storage' }),
          el('dd', { className: 'mono', text: model.storageUri }),
          el('dt', { text: 'Versions' }),
          el('dd', {}, [versionList(model)]),
          ...(model.rollout
            ? [
                el('dt', { text: 'Rollout' }),
                el('dd', { className: 'model-rollout', attrs: { 'data-phase': model.rollout.phase } }, [
                  el('span', {
                    className: 'badge',
                    text: `${model.rollout.phase} ${model.rollout.version} ${model.rollout.cohort === undefined ? `at ${model.rollout.weight}%` : `for ${model.rollout.cohort}`}`,
                  }),
                  el('span', { className: 'muted', text: ` ${model.rollout.message ?? ''}` }),
                ]),
              ]
            : []),
          ...(model.shadow
            ? [
                el('dt', { text: 'Shadow' }),
                el('dd', { className: 'model-shadow' }, [shadowLine(model.shadow)]),
              ]
            : []),
          el('dt', { text: 'Inputs' }),
          el('dd', {
            className: 'mono',
            text:
              model.inputs.map((t) => `${t.name} ${t.datatype} [${t.shape.join(',')}]`).join(', ') ||
              'not declared',
          }),
        ]),
        el('div', { className: 'model-charts' }, [
          chartBlock(
            `Calls per minute (${calls} in the last hour)`,
            model.perMinute.map((p) => p.calls),
            `calls of ${model.name}`,
          ),
          chartBlock(
            `Errors per minute (${errors})`,
            model.perMinute.map((p) => p.errors),
            `errors of ${model.name}`,
          ),
          chartBlock(
            `Mean latency per minute (${latency.toFixed(1)} ms)`,
            model.perMinute.map((p) => p.meanLatencyMs),
            `latency of ${model.name}`,
          ),
        ]),
        ...(model.exampleRequest
          ? [
              el('div', { className: 'model-call' }, [
                el('div', { className: 'model-call-head' }, [el('h3', { text: 'Call it' }), copy]),
                el('pre', { className: 'mono', text: command }),
              ]),
            ]
          : []),
      ],
    );
  }

  /**
   * @param {string} title
   * @param {number[]} values
   * @param {string} label
   */
  function chartBlock(title, values, label) {
    return el('figure', { className: 'model-chart' }, [
      el('figcaption', { className: 'muted', text: title }),
      sparkline(values, { label, width: 240, height: 40 }),
    ]);
  }

  async function load() {
    const mine = ++generation;
    try {
      const { items } = await listModels();
      if (mine !== generation) return;
      list.replaceChildren(...items.map(card));
      empty.hidden = items.length > 0;
      count.textContent = `${items.length} model${items.length === 1 ? '' : 's'}`;
    } catch (error) {
      if (mine === generation) onError(error);
    }
  }

  return { reload: () => load() };
}

/**
 * The shadow version's copies over the last hour: how often it agreed with the serving version,
 * and both versions' mean runtime times on the same calls.
 * @param {NonNullable<ModelSummary['shadow']>} shadow
 */
function shadowLine(shadow) {
  const answered = shadow.calls - shadow.failed;
  const agreement =
    shadow.agreementRate === null
      ? 'no copy answered yet'
      : `${(shadow.agreementRate * 100).toFixed(1)}% agreed`;
  return el('span', {
    text:
      `${shadow.version} gets ${shadow.percent}% of calls as copies: ${shadow.calls} in the last hour, ${agreement}` +
      (answered > 0
        ? `, ${shadow.meanLatencyMs.toFixed(1)} ms mean vs ${shadow.servingMeanLatencyMs.toFixed(1)} ms serving`
        : '') +
      (shadow.failed > 0 ? `, ${shadow.failed} failed` : ''),
  });
}

/**
 * Each version with its phase, ready replicas and share of calls; the default marked.
 * @param {ModelSummary} model
 */
function versionList(model) {
  if (model.defaultVersion === undefined) return el('span', { text: 'one version (100% of calls)' });
  return el(
    'ul',
    { className: 'versions' },
    model.versions.map((v) =>
      el('li', { attrs: { 'data-version': v.name } }, [
        el('span', { className: 'mono', text: v.name }),
        el('span', {
          text: ` ${v.phase}, ${v.readyReplicas} ready, ${v.cohort === undefined ? `${v.traffic}% of calls` : `every call of ${v.cohort}`}${v.name === model.defaultVersion ? ' (default)' : ''}`,
        }),
      ]),
    ),
  );
}
