// Debian's prometheus, scraping the given /metrics URLs every second, keeping its data in the run
// directory: what the Grafana dashboard's queries are checked against.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../../common/net/free-port.js';
import { bins } from '../paths.js';
import type { ProcessRegistry } from '../processes.js';
import type { PrometheusInfo } from '../types.js';
import { httpOk, waitUntil } from '../wait.js';

export async function startPrometheus(
  reg: ProcessRegistry,
  runDir: string,
  tag: string,
  targets: string[],
): Promise<PrometheusInfo> {
  const dir = join(runDir, `prometheus-${tag}`);
  mkdirSync(join(dir, 'data'), { recursive: true });
  const port = await freePort();
  const config = {
    global: { scrape_interval: '1s', evaluation_interval: '1s' },
    // One job per target: each URL's own path and port.
    scrape_configs: targets.map((target, i) => {
      const url = new URL(target);
      return {
        job_name: `target-${i}`,
        metrics_path: url.pathname,
        static_configs: [{ targets: [url.host] }],
      };
    }),
  };
  const file = join(dir, 'prometheus.yml');
  // JSON is YAML: Prometheus reads it as its config file.
  writeFileSync(file, JSON.stringify(config, null, 2));
  const proc = reg.spawn(
    `prometheus-${tag}`,
    bins.prometheus,
    [
      `--config.file=${file}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--storage.tsdb.retention.time=1h',
    ],
    { stopTimeoutMs: 5000 },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(`prometheus ${tag}`, () => httpOk(`${url}/-/ready`), { timeoutMs: 30_000, proc });
  return { url };
}
