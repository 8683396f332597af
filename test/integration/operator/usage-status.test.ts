import { Redis } from 'ioredis';
import { redisKeys } from '../../../common/redis/schema.js';
import type { OperatorManager } from '../../../operator/manager.js';
import { redis } from '../../harness/index.js';
import {
  apiKeyBody,
  cluster,
  eventually,
  keyRef,
  namespace,
  startOperator,
  type Cluster,
} from './support.js';

const TAG = 'operator-usage';
const SYNC_MS = 200;

type KeyStatus = { lastUsed?: string; requestCount?: number };

describe('ApiKey status: usage copied from Redis', () => {
  let c: Cluster;
  let ns: string;
  let client: Redis;
  let operator: OperatorManager | undefined;
  const used = apiKeyBody('platform');
  const unused = apiKeyBody('platform');

  beforeAll(async () => {
    c = await cluster();
    ns = await namespace(c, 'op-usage');
    const redisUrl = (await redis(TAG)).url;
    client = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    for (const k of [used, unused])
      await c.custom.createNamespacedCustomObject({ ...keyRef, namespace: ns, body: k.body });
    operator = startOperator(c, ns, redisUrl, { usageSyncMs: SYNC_MS });
    await operator.start();
    await operator.synced();
  });
  afterAll(async () => {
    await operator?.stop();
    client?.disconnect();
    c?.kc.close();
  });

  const readKey = async (id: string) =>
    (await c.custom.getNamespacedCustomObject({ ...keyRef, namespace: ns, name: `key-${id}` })) as {
      metadata: { resourceVersion: string };
      status?: KeyStatus;
    };
  // As the gateway's usage recorder writes it.
  const recordUse = (id: string, count: number, at: string) =>
    client.hset(redisKeys.keyUsage(id), { count: String(count), lastUsed: at });

  test('a used key shows its last use and count (in kubectl too); an unused key has no status', async () => {
    const at = new Date(Date.now() - 3_600_000).toISOString();
    await recordUse(used.id, 3, at);
    const key = await eventually(async () => {
      const k = await readKey(used.id);
      return k.status?.requestCount === 3 && k;
    }, 'the usage in the status');
    expect(key.status).toEqual({ lastUsed: at, requestCount: 3 });
    expect((await readKey(unused.id)).status).toBeUndefined();

    const table = await c.kubectl(
      'get',
      'apikeys',
      '-n',
      ns,
      '-o',
      'custom-columns=NAME:.metadata.name,LAST:.status.lastUsed',
    );
    expect(table.stdout).toContain(`key-${used.id}   ${at}`);
    expect(table.stdout).toMatch(new RegExp(`key-${unused.id}\\s+<none>`));
    // The default view: the Last Used column is an age for the used key, empty for the other.
    const rows = (await c.kubectl('get', 'apikeys', '-n', ns)).stdout.split('\n');
    const row = (id: string) =>
      rows
        .find((r) => r.startsWith(`key-${id} `))
        ?.trim()
        .split(/\s+/);
    expect(rows[0]).toMatch(/OWNER\s+LAST USED\s+AGE$/);
    expect(row(used.id)).toHaveLength(7);
    expect(row(used.id)?.[5]).toMatch(/^\d+[smhd]/);
    expect(row(unused.id)).toHaveLength(6);
  });

  test('an unchanged count is not written again; a new use is', async () => {
    const before = await readKey(used.id);
    // Several passes with nothing new: the object is not rewritten.
    await new Promise((r) => setTimeout(r, SYNC_MS * 5));
    expect((await readKey(used.id)).metadata.resourceVersion).toBe(before.metadata.resourceVersion);

    const later = new Date().toISOString();
    await recordUse(used.id, 7, later);
    const key = await eventually(async () => {
      const k = await readKey(used.id);
      return k.status?.requestCount === 7 && k;
    }, 'the new usage in the status');
    expect(key.status).toEqual({ lastUsed: later, requestCount: 7 });
  });

  test('figures no gateway writes are not copied, and hold back no other key', async () => {
    // A sidecar's Redis user may write usage figures, and its team can read its password.
    for (const [count, lastUsed] of [
      ['-1000000000', new Date().toISOString()],
      ['12', 'yesterday'],
      ['1e30', new Date().toISOString()],
      // A number, but not as HINCRBY writes one: shown, it would be whatever a team wrote.
      ['1e3', new Date().toISOString()],
    ]) {
      await client.hset(redisKeys.keyUsage(unused.id), { count, lastUsed });
      const later = new Date(Date.now() + 1000).toISOString();
      const n = ((await readKey(used.id)).status?.requestCount ?? 0) + 1;
      await recordUse(used.id, n, later);
      const key = await eventually(async () => {
        const k = await readKey(used.id);
        return k.status?.requestCount === n && k;
      }, 'the other key’s usage in its status');
      expect(key.status).toEqual({ lastUsed: later, requestCount: n });
      expect((await readKey(unused.id)).status).toBeUndefined();
    }
  });
});
