// An OpenTelemetry Collector built from its Go modules (go/otelcol: the OTLP receiver and the
// debug exporter), on loopback: what Tollgate's processes send with OTEL_EXPORTER_OTLP_ENDPOINT
// set to its url is written to its log in detail, and read back as spans by `readSpans`.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../../common/net/free-port.js';
import { binDir } from '../paths.js';
import type { ProcessRegistry } from '../processes.js';
import type { CollectorInfo } from '../types.js';
import { waitUntil } from '../wait.js';

export async function startOtelCollector(
  reg: ProcessRegistry,
  runDir: string,
  tag: string,
): Promise<CollectorInfo> {
  const dir = join(runDir, `otelcol-${tag}`);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      'receivers:',
      '  otlp:',
      '    protocols:',
      '      http:',
      `        endpoint: 127.0.0.1:${port}`,
      'exporters:',
      '  debug:',
      '    verbosity: detailed',
      'service:',
      '  telemetry:',
      // Its own metrics would be served on :8888, shared by every collector of the run.
      '    metrics:',
      '      level: none',
      '  pipelines:',
      '    traces:',
      '      receivers: [otlp]',
      '      exporters: [debug]',
      '',
    ].join('\n'),
  );
  const proc = reg.spawn(`otelcol-${tag}`, join(binDir, 'otelcol'), ['--config', config], {
    stopTimeoutMs: 5000,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(
    `otelcol ${tag}`,
    async () => {
      const res = await fetch(`${url}/v1/traces`, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      return res.status > 0;
    },
    { timeoutMs: 20_000, proc },
  );
  return { url, log: proc.logFile };
}

/** One span as the debug exporter wrote it. */
export interface ReadSpan {
  service: string;
  traceId: string;
  parentId: string;
  id: string;
  name: string;
  kind: string;
  status: string;
  attributes: Record<string, string>;
}

/** Every span in a collector's log so far, in the order it received them. */
export function readSpans(log: string): ReadSpan[] {
  const text = readFileSync(log, 'utf8');
  const spans: ReadSpan[] = [];
  let service = '';
  let span: ReadSpan | undefined;
  let inAttributes = false;
  for (const line of text.split('\n')) {
    const resource = /-> service\.name: Str\((.*)\)$/.exec(line);
    if (resource !== null && span === undefined) {
      service = resource[1] ?? '';
      continue;
    }
    if (/^ResourceSpans #/.test(line.replace(/^.*?\t/, '')) || line.includes('ResourceSpans #')) {
      span = undefined;
      inAttributes = false;
      continue;
    }
    if (/^Span #\d+/.test(line) || /\tSpan #\d+/.test(line) || line.startsWith('Span #')) {
      span = { service, traceId: '', parentId: '', id: '', name: '', kind: '', status: '', attributes: {} };
      spans.push(span);
      inAttributes = false;
      continue;
    }
    if (span === undefined) continue;
    const field = /^\s+(Trace ID|Parent ID|ID|Name|Kind|Status code)\s*: ?(.*)$/.exec(line);
    if (field !== null && !inAttributes) {
      const value = (field[2] ?? '').trim();
      if (field[1] === 'Trace ID') span.traceId = value;
      else if (field[1] === 'Parent ID') span.parentId = value;
      else if (field[1] === 'ID') span.id = value;
      else if (field[1] === 'Name') span.name = value;
      else if (field[1] === 'Kind') span.kind = value;
      else span.status = value;
      continue;
    }
    if (line.startsWith('Attributes:')) {
      inAttributes = true;
      continue;
    }
    const attribute = /^\s+-> ([\w.]+): \w+\((.*)\)$/.exec(line);
    if (attribute !== null && inAttributes) {
      span.attributes[attribute[1] ?? ''] = attribute[2] ?? '';
      continue;
    }
    if (inAttributes && !line.startsWith(' ')) inAttributes = false;
  }
  return spans;
}
