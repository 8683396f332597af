import { spawn } from 'node:child_process';
import path from 'node:path';
import { Redis } from 'ioredis';
import { redisKeys } from '../../../common/redis/schema.js';
import { freePort, redis } from '../../harness/index.js';
import {
  cluster,
  createModel,
  eventually,
  getModel,
  modelFolder,
  namespace,
  npSettings,
  removeModelFolders,
  ROOT,
} from './support.js';

afterAll(removeModelFolders);

describe('tollgate operator (the process)', () => {
  test('reconciles, serves /metrics and /healthz, holds the Lease, and stops cleanly on SIGTERM', async () => {
    const c = await cluster();
    const ns = await namespace(c, 'op-cli');
    const redisUrl = (await redis('operator-cli')).url;
    const port = await freePort();
    const child = spawn(
      'node',
      [
        path.join(ROOT, 'bin/tollgate.js'),
        'operator',
        '--kubeconfig',
        c.info.kubeconfig,
        '--namespace',
        ns,
        '--redis-url',
        redisUrl,
        '--lease-namespace',
        ns,
        '--grant-key-secret',
        'tollgate-signing-key',
        '--metrics-port',
        String(port),
      ],
      { env: { PATH: process.env.PATH, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.resume();
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const client = new Redis(redisUrl);
    try {
      const dir = await modelFolder({ 'model-settings.json': npSettings('model-cli'), 'model.joblib': 'x' });
      await createModel(c, ns, 'model-cli', { storageUri: `file://${dir}` });
      // The operator as installed reads no folder of its own disk for a Model: reconciled, refused.
      const refused = await eventually(
        async () => {
          const m = await getModel(c, ns, 'model-cli');
          return m?.status?.phase === 'Failed' && m;
        },
        'the Model reconciled (refused)',
        30_000,
      );
      expect(refused.status?.conditions?.find((x) => x.type === 'SettingsValid')).toMatchObject({
        status: 'False',
        reason: 'StorageNotAllowed',
      });
      await eventually(
        () => client.get(redisKeys.indexMarker).then((v) => v ?? undefined),
        'the index marker',
      );

      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toMatch(
        // A refused storage is looked at again later: a requeue, not an error.
        /tollgate_operator_reconcile_total\{controller="model",result="requeue"\} [1-9]/,
      );
      expect(metrics).toMatch(
        /tollgate_operator_reconcile_duration_seconds_count\{controller="model"\} [1-9]/,
      );
      expect(metrics).toMatch(/tollgate_operator_workqueue_depth\{controller="model"\} 0/);
      expect(metrics).toContain('tollgate_operator_leader 1');
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);

      // JSON logs, one object per line.
      const lines = out.trim().split('\n');
      expect(lines.map((l) => JSON.parse(l) as { name: string })).toContainEqual(
        expect.objectContaining({ name: 'operator', msg: 'became leader' }),
      );

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      // The Lease was released for a successor.
      const { CoordinationV1Api } = await import('@kubernetes/client-node');
      const lease = await c.kc
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ namespace: ns, name: 'tollgate-operator' });
      expect(lease.spec?.holderIdentity).toBeUndefined();
    } finally {
      child.kill('SIGKILL');
      client.disconnect();
      c.kc.close();
    }
  });
});
