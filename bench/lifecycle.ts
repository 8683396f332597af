import {
  applyDoc,
  call,
  deploymentReplicas,
  eventually,
  irisInfer,
  podNames,
  scaledModelDoc,
  versionedModelDoc,
  type Installed,
  type IrisModel,
} from '../test/cluster/support.js';
import { steadyLoad } from '../test/harness/steady-load.js';

const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/**
 * The model lifecycle on the test cluster, under a steady load through the gateway: a canary
 * shift and a promotion (how soon the answers follow, how the split comes out, calls lost), then
 * autoscaling (to three replicas under load, back to one, to zero when idle). The cold starts
 * from zero are bench/cold-starts.ts.
 */
export async function lifecycle(
  t: Installed,
  iris: IrisModel,
  ns: string,
  auth: Record<string, string>,
): Promise<void> {
  const one = irisInfer([iris.expected.rows[0] ?? [5.1, 3.5, 1.4, 0.2]]);
  const patch = (name: string, spec: unknown) =>
    t.kubectl('-n', ns, 'patch', 'model', name, '--type=merge', '-p', JSON.stringify({ spec }));

  for (const v of ['1', '2']) await iris.upload('bench', `canary/${v}`, 'model-canary');
  await applyDoc(t.c, versionedModelDoc('model-canary', ns, 'bench', 'canary', { defaultVersion: '1' }));
  await eventually(
    'both versions answer',
    async () => {
      const ok = await Promise.all(
        ['1', '2'].map(
          async (v) =>
            (
              await call(`${t.gateway}/v2/models/model-canary/versions/${v}/infer`, {
                headers: auth,
                body: one,
              })
            ).status === 200,
        ),
      );
      return ok.every(Boolean) ? true : undefined;
    },
    300_000,
  );
  const canary = steadyLoad(async () => {
    const r = await call(`${t.gateway}/v2/models/model-canary/infer`, { headers: auth, body: one });
    return { status: r.status, label: String(r.body['model_version'] ?? ''), detail: JSON.stringify(r.body) };
  }, 4);
  await canary.settles(['1']);
  await patch('model-canary', { traffic: [{ version: '2', percent: 50 }] });
  const shifted = await canary.settles(['1', '2'], 10);
  const mark = canary.mark();
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  const split = canary.since(mark);
  const share = split.filter((v) => v === '2').length / Math.max(split.length, 1);
  await patch('model-canary', { defaultVersion: '2', traffic: null });
  const promoted = await canary.settles(['2']);
  const tally = await canary.stop();
  console.log(
    `canary shift to 50%: both versions answering ${secs(shifted)} after the edit; version 2 took ${(share * 100).toFixed(1)}% of the next ${split.length} calls`,
  );
  console.log(`promotion: every answer from version 2 ${secs(promoted)} after the edit`);
  console.log(
    `calls failed through the shift and the promotion: ${tally.total - (tally.byStatus['200'] ?? 0)} of ${tally.total}`,
  );
  await t.kubectl('-n', ns, 'delete', 'model', 'model-canary', '--wait=true');

  await iris.upload('bench', 'auto', 'model-auto');
  await applyDoc(t.c, scaledModelDoc('model-auto', ns, 's3://bench/auto'));
  const infer = () => call(`${t.gateway}/v2/models/model-auto/infer`, { headers: auth, body: one });
  await eventually(
    'model-auto answers',
    async () => ((await infer()).status === 200 ? true : undefined),
    300_000,
  );
  const heavy = steadyLoad(async () => {
    const r = await infer();
    return { status: r.status, label: '', detail: JSON.stringify(r.body) };
  }, 4);
  const loaded = Date.now();
  await eventually(
    'three replicas',
    async () => ((await deploymentReplicas(t, ns, 'model-auto')).ready === 3 ? true : undefined),
    180_000,
  );
  const up = Date.now() - loaded;
  const heavyTally = await heavy.stop();
  const dropped = Date.now();
  await eventually(
    'one replica',
    async () => ((await podNames(t, ns, 'tollgate.dev/model=model-auto')).length === 1 ? true : undefined),
    180_000,
  );
  const down = Date.now() - dropped;
  await eventually(
    'zero',
    async () => ((await podNames(t, ns, 'tollgate.dev/model=model-auto')).length === 0 ? true : undefined),
    180_000,
  );
  const zero = Date.now() - dropped;
  console.log(
    `autoscaling (1 replica per call in flight, 4 clients): 3 replicas ready ${secs(up)} after the load began; one left ${secs(down)} after it stopped (10 s window, 5 s preStop); none ${secs(zero)} after (idle 15 s); calls failed ${heavyTally.total - (heavyTally.byStatus['200'] ?? 0)} of ${heavyTally.total}`,
  );
  await t.kubectl('-n', ns, 'delete', 'model', 'model-auto', '--wait=true');
}
