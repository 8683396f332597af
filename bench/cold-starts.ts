import {
  applyDoc,
  call,
  eventually,
  irisInfer,
  podNames,
  scaledModelDoc,
  type Installed,
  type IrisModel,
} from '../test/cluster/support.js';

/** What the pod's status says of one start (Kubernetes keeps these to the second). */
interface PodTimes {
  created: number;
  scheduled?: number;
  initialized?: number;
  started?: number;
  ready?: number;
}

const quantile = (xs: number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
};
const median = (xs: number[]): number => quantile(xs, 0.5);
const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

async function podTimes(t: Installed, ns: string, model: string): Promise<PodTimes | undefined> {
  const out = await t.kubectl('-n', ns, 'get', 'pods', '-l', `tollgate.dev/model=${model}`, '-o', 'json');
  const pod = (
    JSON.parse(out) as {
      items: Array<{
        metadata: { creationTimestamp: string };
        status?: {
          conditions?: Array<{ type: string; lastTransitionTime: string }>;
          containerStatuses?: Array<{ state?: { running?: { startedAt?: string } } }>;
        };
      }>;
    }
  ).items[0];
  if (pod === undefined) return undefined;
  const at = (type: string) => {
    const c = pod.status?.conditions?.find((x) => x.type === type)?.lastTransitionTime;
    return c === undefined ? undefined : Date.parse(c);
  };
  const started = pod.status?.containerStatuses?.[0]?.state?.running?.startedAt;
  return {
    created: Date.parse(pod.metadata.creationTimestamp),
    scheduled: at('PodScheduled'),
    initialized: at('Initialized'),
    ...(started === undefined ? {} : { started: Date.parse(started) }),
    ready: at('Ready'),
  };
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
  const total: number[] = [];
  const phases = {
    schedule: [] as number[],
    pull: [] as number[],
    start: [] as number[],
    ready: [] as number[],
    after: [] as number[],
  };
  let failed = 0;
  for (let i = 0; i < runs; i++) {
    await eventually(
      'zero',
      async () => ((await podNames(t, ns, `tollgate.dev/model=${model}`)).length === 0 ? true : undefined),
      180_000,
      100,
    );
    const sent = Date.now();
    const answer = await infer();
    const done = Date.now();
    if (answer.status !== 200) failed++;
    total.push(done - sent);
    const p = await podTimes(t, ns, model);
    if (
      p?.scheduled !== undefined &&
      p.initialized !== undefined &&
      p.started !== undefined &&
      p.ready !== undefined
    ) {
      phases.schedule.push(p.scheduled - p.created);
      phases.pull.push(p.initialized - p.scheduled);
      phases.start.push(p.started - p.initialized);
      phases.ready.push(p.ready - p.started);
      phases.after.push(done - p.ready);
    }
  }
  console.log(
    `cold start from zero over ${runs} starts, first call to its answer: p50 ${s(median(total))}, p95 ${s(quantile(total, 0.95))}, max ${s(Math.max(...total))}; ${failed} failed (target p95 under 3 s)`,
  );
  console.log(
    `  where the seconds go (medians, to the second): pod created to scheduled ${s(median(phases.schedule))}; ` +
      `scheduled to initialized (sandbox, puller) ${s(median(phases.pull))}; to MLServer started ${s(median(phases.start))}; ` +
      `to Ready (model loaded, probe) ${s(median(phases.ready))}; Ready to the answer ${s(median(phases.after))}`,
  );
  await t.kubectl('-n', ns, 'delete', 'model', model, '--wait=true');
}
