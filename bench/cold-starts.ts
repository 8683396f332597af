import {
  applyDoc,
  call,
  eventually,
  irisInfer,
  podNames,
  scaledModelDoc,
  type Installed,
  type IrisModel,
  wakeUps,
} from '../test/cluster/support.js';
import { PodTimeline } from './pod-timeline.js';

const quantile = (xs: number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
};
const median = (xs: number[]): number => quantile(xs, 0.5);
const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

/** When a container of the model's pod logged a line (the container runtime's timestamps). */
async function loggedAt(
  t: Installed,
  ns: string,
  model: string,
  container: string,
  line: (l: string) => boolean,
): Promise<number | undefined> {
  const out = await t
    .kubectl(
      '-n',
      ns,
      'logs',
      '-l',
      `tollgate.dev/model=${model}`,
      '-c',
      container,
      '--timestamps',
      '--tail=-1',
    )
    .catch(() => '');
  const stamp = out.split('\n').find(line)?.split(' ')[0];
  return stamp === undefined ? undefined : Date.parse(stamp);
}

/**
 * Cold starts from zero on the test cluster's node, `runs` times: a model scaled to zero, then one
 * call through the gateway, timed from sending it to its answer (the pod scheduled, the folder
 * pulled from MinIO, MLServer started and the model loaded, the replica seen ready and the held
 * call sent on). p50 and p95 over the runs, and where the seconds went (medians of the pod's own
 * timestamps, which Kubernetes keeps to the second).
 */
export async function coldStarts(
  t: Installed,
  iris: IrisModel,
  ns: string,
  auth: Record<string, string>,
  runs = 20,
): Promise<void> {
  const model = 'model-cold';
  await iris.upload('bench', 'cold', model);
  const doc = scaledModelDoc(model, ns, 's3://bench/cold') as { spec: Record<string, unknown> };
  doc.spec['scaling'] = {
    minReplicas: 0,
    maxReplicas: 1,
    targetInFlight: 1,
    idleSeconds: 5,
    scaleDownSeconds: 0,
  };
  await applyDoc(t.c, doc);
  const one = irisInfer([iris.expected.rows[0] ?? [5.1, 3.5, 1.4, 0.2]]);
  const infer = () => call(`${t.gateway}/v2/models/${model}/infer`, { headers: auth, body: one });
  await eventually(
    'model-cold answers',
    async () => ((await infer()).status === 200 ? true : undefined),
    300_000,
  );
  const timeline = await PodTimeline.watch(t.c.kubeconfig, ns, model, `tollgate.dev/model=${model}`);
  const total: number[] = [];
  // Each step's time from the call sent (ms), over the starts where it was seen.
  const steps = [
    'scaled',
    'created',
    'scheduled',
    'addressed',
    'pulled',
    'started',
    'loaded',
    'answered',
    'ready',
  ] as const;
  const offsets = new Map<string, number[]>(steps.map((k) => [k, []]));
  let failed = 0;
  try {
    for (let i = 0; i < runs; i++) {
      await eventually(
        'zero',
        async () => ((await podNames(t, ns, `tollgate.dev/model=${model}`)).length === 0 ? true : undefined),
        180_000,
        100,
      );
      timeline.reset();
      const sent = Date.now();
      const answer = await infer();
      const done = Date.now();
      if (answer.status !== 200) failed++;
      total.push(done - sent);
      // The call may be answered before the pod is Ready (the gateway asks the starting replica).
      await eventually(
        'Ready',
        async () => (timeline.seen.ready === undefined ? undefined : true),
        30_000,
        50,
      );
      const seen: Record<string, number | undefined> = {
        ...timeline.seen,
        // The puller's summary ends its pull; MLServer says when it has loaded the model.
        pulled: await loggedAt(t, ns, model, 'pull', (l) => / pulled \d+ files?, /.test(l)),
        loaded: await loggedAt(t, ns, model, 'mlserver', (l) => l.includes('Loaded model')),
        answered: done,
      };
      for (const k of steps) {
        const at = seen[k];
        if (at !== undefined) offsets.get(k)?.push(at - sent);
      }
    }
  } finally {
    timeline.close();
  }
  const wakes = await wakeUps(t, model);
  const early = wakes.filter((l) => l.includes('"early"')).length;
  const at = (k: string): string => {
    const xs = offsets.get(k) ?? [];
    return `${s(median(xs)).padStart(7)} (p95 ${s(quantile(xs, 0.95))}, ${xs.length} seen)`;
  };
  console.log(
    `cold start from zero over ${runs} starts, first call to its answer: p50 ${s(median(total))}, p95 ${s(quantile(total, 0.95))}, max ${s(Math.max(...total))}; ${failed} failed (target p95 under 3 s)`,
  );
  console.log(
    `  when each step was seen, from the call sent (median, p95):\n` +
      `    the Deployment scaled (the operator's wake-up)   ${at('scaled')}\n` +
      `    the pod created (ReplicaSet controller)          ${at('created')}\n` +
      `    scheduled                                        ${at('scheduled')}\n` +
      `    its address (sandbox, network)                   ${at('addressed')}\n` +
      `    the model pulled (the puller's summary)          ${at('pulled')}\n` +
      `    the runtime's container running                  ${at('started')}\n` +
      `    the model loaded (MLServer's log)                ${at('loaded')}\n` +
      `    the call answered                                ${at('answered')}\n` +
      `    the pod Ready (kubelet probe, status)            ${at('ready')}\n` +
      `  ${early} of ${wakes.length} wake-ups sent their calls to a starting replica that answered its readiness probe, before the route said it was ready`,
  );
  await t.kubectl('-n', ns, 'delete', 'model', model, '--wait=true');
}
