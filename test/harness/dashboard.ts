import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The chart's Grafana dashboard against a real Prometheus: every panel's queries, as Grafana sends
 * them with every model selected, run while `traffic` keeps calls going, until each returns
 * series. Resolves with the titles of the panels that never did (none, when the dashboard is right).
 */
interface Dashboard {
  panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
}

const DASHBOARD = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../helm/tollgate/dashboards/tollgate.json',
);

const resolve = (expr: string): string =>
  expr.replaceAll('$__rate_interval', '1m').replaceAll('model=~"$model"', 'model=~".+"');

async function query(promUrl: string, expr: string): Promise<unknown[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as { status: string; error?: string; data?: { result: unknown[] } };
  if (body.status !== 'success') throw new Error(`${expr}: ${body.error ?? res.status}`);
  return body.data?.result ?? [];
}

export async function panelsWithoutSeries(
  promUrl: string,
  traffic: () => Promise<void>,
  timeoutMs = 60_000,
): Promise<{ panels: number; empty: string[] }> {
  const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as Dashboard;
  const panels = dashboard.panels.filter((p) => p.type !== 'row');
  let pending = panels.map((p) => ({ title: p.title, exprs: (p.targets ?? []).map((t) => resolve(t.expr)) }));
  const deadline = Date.now() + timeoutMs;
  // Prometheus scrapes every second and rates need two samples: the traffic goes on until each
  // panel has series (or the deadline says which do not).
  while (pending.length > 0 && Date.now() < deadline) {
    await traffic();
    await new Promise((r) => setTimeout(r, 1_000));
    const still: typeof pending = [];
    for (const panel of pending) {
      const results = await Promise.all(panel.exprs.map((e) => query(promUrl, e)));
      if (panel.exprs.length === 0 || results.some((r) => r.length === 0)) still.push(panel);
    }
    pending = still;
  }
  return { panels: panels.length, empty: pending.map((p) => p.title) };
}
