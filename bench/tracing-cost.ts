import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../common/net/free-port.js';
import { binDir } from '../test/harness/paths.js';
import { CLI, start, waitFor } from './support.js';
import { load, warmUp, type Figures } from './wrk.js';

/**
 * What tracing costs a call: the same gateway with OTLP export to a real OpenTelemetry Collector
 * (built from its Go modules; its debug exporter at `basic`, counting what it gets) at 1% and at
 * 100% sampling, against the untraced gateway of the run, interleaved. The collector shares the
 * machine's CPUs, as the upstream and wrk do: one on another machine costs the gateway less.
 */
export async function tracingCost(
  dir: string,
  env: (port: number) => NodeJS.ProcessEnv,
  untraced: { url: string; pid: number },
  path: string,
  headers: Record<string, string>,
  rounds: number,
  workers: number,
  median: (runs: Figures[]) => Figures,
): Promise<string[]> {
  const port = await freePort();
  const config = join(dir, 'otelcol.yaml');
  writeFileSync(
    config,
    `receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:${port}\n` +
      `exporters:\n  debug:\n    verbosity: basic\n` +
      `service:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [debug]\n`,
  );
  start('otel collector', join(binDir, 'otelcol'), ['--config', config]);
  const traced = async (name: string, ratio: string) => {
    const gatewayPort = await freePort();
    const proc = start(name, process.execPath, [CLI, 'gateway', '--workers', String(workers)], {
      ...env(gatewayPort),
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: ratio,
    });
    const url = `http://127.0.0.1:${gatewayPort}${path}`;
    await waitFor(url, headers);
    return { url, pid: proc.pid as number };
  };
  const targets = {
    untraced,
    one: await traced('gateway, traced 1%', '0.01'),
    all: await traced('gateway, traced 100%', '1'),
  };
  const runs: Record<keyof typeof targets, Figures[]> = { untraced: [], one: [], all: [] };
  for (const t of Object.values(targets)) await warmUp(t.url, headers);
  for (let round = 0; round < rounds; round++)
    for (const [name, t] of Object.entries(targets) as Array<
      [keyof typeof targets, { url: string; pid: number }]
    >)
      runs[name].push(await load(t.url, headers, t.pid));
  const base = median(runs.untraced);
  const line = (label: string, f: Figures[]): string => {
    const m = median(f);
    return (
      `  ${label}: ${Math.round(m.rps)} req/s, ${(m.rps / base.rps).toFixed(3)} of untraced ` +
      `(per round: ${f.map((g, i) => (g.rps / (runs.untraced[i]?.rps ?? NaN)).toFixed(3)).join(', ')}), ` +
      `CPU per call ${m.cpuUs.toFixed(1)} µs against ${base.cpuUs.toFixed(1)}`
    );
  };
  return [
    `tracing's cost (OTLP/HTTP to a collector on this machine), untraced ${Math.round(base.rps)} req/s:`,
    line('1% sampled', runs.one),
    line('100% sampled', runs.all),
  ];
}
