import { readFileSync } from 'node:fs';

/** Loading the program's modules: the process's start, not its calls. */
export const STARTUP = 'startup: loading modules';

/** A V8 CPU profile as `node --cpu-prof` writes it. */
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
}

/**
 * Where a call's CPU goes, by part: each sample goes to the part of the innermost frame that has
 * one (a Map.set inside the usage recorder is the usage's; a socket write inside the proxy is
 * Node's), so the parts add up to the busy time. The order below only breaks ties of one frame.
 */
const PARTS: Array<[string, RegExp]> = [
  [
    'key check',
    /\/gateway\/auth\/(key-check|authenticate|authorization-header)\.|\/common\/apikey\/|\/common\/crypto\//,
  ],
  ['route', /\/gateway\/routing\/|\/common\/routes\//],
  ['the decision for another proxy (forward auth)', /\/gateway\/forward-auth\//],
  [
    'limits and credits',
    /\/gateway\/auth\/(rate-limit|counter-leases|limit-notices|credit-costs|redis-clock)\.|\/gateway\/admission\//,
  ],
  ['usage', /\/gateway\/auth\/usage\.|\/gateway\/v2\/model-usage\.|\/gateway\/periodic-flush\./],
  ['metrics', /\/gateway\/metrics\.|\/prom-client\//],
  [
    'logging and audit',
    /\/pino|\/sonic-boom\/|\/common\/logger\.|\/gateway\/audit\/|\/gateway\/auth\/refusals\./,
  ],
  ['Redis client', /\/ioredis\/|\/redis-parser\/|\/denque\//],
  ['proxy: undici and headers', /\/undici\/|\/gateway\/proxy\//],
  [
    "the gateway's HTTP shell (gates, path, call)",
    /\/gateway\/(server|central-server|events-handler)\.|\/gateway\/http\//,
  ],
  [STARTUP, /^node:internal\/modules\//],
  ["Node's HTTP server, streams and sockets", /^node:/],
];

export interface Breakdown {
  /** Busy time (every sample but idle), in microseconds. */
  busyUs: number;
  parts: Array<{ part: string; us: number }>;
}

export function cpuBreakdown(profileFile: string): Breakdown {
  const profile = JSON.parse(readFileSync(profileFile, 'utf8')) as CpuProfile;
  const parent = new Map<number, number>();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const partOf = new Map<number, string | undefined>();
  const classify = (id: number): string | undefined => {
    if (partOf.has(id)) return partOf.get(id);
    const node = byId.get(id);
    const { functionName, url } = node?.callFrame ?? { functionName: '', url: '' };
    let part: string | undefined;
    if (functionName === '(idle)') part = '(idle)';
    else if (functionName === '(garbage collector)') part = 'garbage collection';
    else if (functionName === '(program)') part = 'V8 and native code (unattributed)';
    else part = PARTS.find(([, re]) => re.test(url))?.[0];
    if (part === undefined) {
      const up = parent.get(id);
      part = up === undefined ? 'other' : classify(up);
    }
    partOf.set(id, part);
    return part;
  };
  const totals = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const part = classify(id) ?? 'other';
    totals.set(part, (totals.get(part) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  totals.delete('(idle)');
  const parts = [...totals].map(([part, us]) => ({ part, us })).sort((a, b) => b.us - a.us);
  return { busyUs: parts.reduce((sum, p) => sum + p.us, 0), parts };
}
