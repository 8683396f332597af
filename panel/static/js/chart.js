// Small bar charts as inline SVG, drawn with DOM calls (no library, nothing from the server parsed
// as markup). Each bar has a <title>, so a hover (or a screen reader) tells its figures.
const SVG = 'http://www.w3.org/2000/svg';

/**
 * @param {string} tag
 * @param {Record<string, string | number>} attrs
 * @returns {SVGElement}
 */
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return node;
}

/**
 * A sparkline of counts: one bar per value, scaled to the largest.
 * @param {number[]} values oldest first
 * @param {{ label: string; width?: number; height?: number }} options
 * @returns {SVGElement}
 */
export function sparkline(values, { label, width = 96, height = 24 }) {
  const root = svg('svg', {
    class: 'sparkline',
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-label': label,
  });
  const max = Math.max(1, ...values);
  const step = width / Math.max(1, values.length);
  values.forEach((v, i) => {
    const h = v === 0 ? 1 : Math.max(2, (v / max) * height);
    root.append(
      svg('rect', {
        x: (i * step).toFixed(2),
        y: (height - h).toFixed(2),
        width: Math.max(1, step - 1).toFixed(2),
        height: h.toFixed(2),
        class: v === 0 ? 'bar-empty' : 'bar',
      }),
    );
  });
  return root;
}

/**
 * Requests and refusals per bucket, stacked, with a bar's figures in its title.
 * @param {Array<{ at: string; requests: number; refusals: number }>} points oldest first
 * @param {{ label: string; bucket: (at: string) => string; width?: number; height?: number }} options
 * @returns {SVGElement}
 */
export function usageChart(points, { label, bucket, width = 720, height = 120 }) {
  const root = svg('svg', {
    class: 'usage-chart',
    viewBox: `0 0 ${width} ${height}`,
    preserveAspectRatio: 'none',
    role: 'img',
    'aria-label': label,
  });
  const max = Math.max(1, ...points.map((p) => p.requests + p.refusals));
  const step = width / Math.max(1, points.length);
  points.forEach((p, i) => {
    if (p.requests + p.refusals === 0) return;
    const x = (i * step).toFixed(2);
    const w = Math.max(0.5, step * 0.8).toFixed(2);
    const ok = (p.requests / max) * height;
    const refused = (p.refusals / max) * height;
    const group = svg('g', { 'data-at': p.at });
    const title = svg('title', {});
    title.textContent = `${bucket(p.at)}: ${p.requests} requests, ${p.refusals} refused`;
    group.append(title);
    if (ok > 0)
      group.append(
        svg('rect', { x, y: (height - ok).toFixed(2), width: w, height: ok.toFixed(2), class: 'bar' }),
      );
    if (refused > 0) {
      group.append(
        svg('rect', {
          x,
          y: (height - ok - refused).toFixed(2),
          width: w,
          height: refused.toFixed(2),
          class: 'bar-refused',
        }),
      );
    }
    root.append(group);
  });
  return root;
}
