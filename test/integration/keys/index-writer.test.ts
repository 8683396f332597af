import { jest } from '@jest/globals';
import { Redis } from 'ioredis';
import { KeyIndexWriter } from '../../../common/apikey/index-writer.js';
import { generateKey, hashKey } from '../../../common/apikey/format.js';
import { keyChangeTag, redisChannels, redisKeys, routeChangeTag } from '../../../common/redis/schema.js';
import type { KeyGrant } from '../../../common/resources/grant.js';
import { newKeyId } from '../../../common/resources/apikey.js';
import { RouteWriter, WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { putWorkflowRoute } from '../workflow-route.js';
import { redis, restartRedis, stopRedis } from '../../harness/index.js';
import { testSealer, testVerifier, readSealed } from '../signing.js';

const clientOptions = {
  maxRetriesPerRequest: 0,
  enableOfflineQueue: false,
  retryStrategy: () => 50,
} as const;

/** A client already connected: without an offline queue, a command sent while connecting fails. */
async function connected(url: string): Promise<Redis> {
  const client = new Redis(url, { ...clientOptions, lazyConnect: true });
  await client.connect();
  return client;
}

/** Collects the messages of a channel, the way a gateway replica's subscriber receives them. */
async function listen(url: string, channel: string): Promise<{ messages: string[]; close(): void }> {
  const sub = new Redis(url);
  const messages: string[] = [];
  sub.on('message', (_channel: string, message: string) => messages.push(message));
  await sub.subscribe(channel);
  return { messages, close: () => sub.disconnect() };
}

async function until(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('key index writer', () => {
  let url: string;
  let client: Redis;
  beforeAll(async () => {
    url = (await redis()).url;
    client = await connected(url);
  });
  afterAll(() => client.disconnect());

  it('writes the grant under the key’s hash and tells every subscriber at once, by a tag that is not the hash', async () => {
    const writer = new KeyIndexWriter(client, await testSealer());
    const replicaA = await listen(url, redisChannels.keys);
    const replicaB = await listen(url, redisChannels.keys);
    try {
      const hash = hashKey(generateKey('platform'));
      const grant: KeyGrant = {
        id: newKeyId(),
        owner: 'alice',
        module: 'platform',
        roles: ['viewer'],
        name: 'ci',
        expiresAt: '2031-01-01T00:00:00.000Z',
        rateLimit: { requests: 10, windowSeconds: 1 },
      };
      await writer.put(hash, grant);
      expect(await readSealed(client, redisKeys.apiKey(hash))).toEqual(grant);
      const tag = keyChangeTag(hash);
      await until(() => replicaA.messages.includes(tag) && replicaB.messages.includes(tag));
      // A subscriber that does not hold the hash (a tenant with a sidecar's Redis password) learns
      // nothing it can look up: the tag names no entry and no counter.
      expect(replicaA.messages).not.toContain(hash);
      expect(await client.exists(redisKeys.apiKey(tag))).toBe(0);

      await client.hset(redisKeys.keyUsage(grant.id), { lastUsed: new Date().toISOString(), count: 3 });
      await writer.delete({ hash, id: grant.id });
      expect(await client.exists(redisKeys.apiKey(hash), redisKeys.keyUsage(grant.id))).toBe(0);
      await until(() => replicaA.messages.filter((m) => m === tag).length === 2);
      expect(replicaB.messages.filter((m) => m === tag)).toHaveLength(2);
    } finally {
      replicaA.close();
      replicaB.close();
    }
  });

  it('answers 503 redis_unavailable when Redis is down, and works again once it is back', async () => {
    const tag = 'keys-index-writer';
    const own = await redis(tag);
    const down = new Redis(own.url, clientOptions);
    down.on('error', () => undefined);
    try {
      await until(() => down.status === 'ready', 5_000);
      await stopRedis(tag);
      const writer = new KeyIndexWriter(down, await testSealer());
      const hash = hashKey(generateKey('bda'));
      const grant: KeyGrant = { id: newKeyId(), owner: 'alice', module: 'bda', roles: ['wf'] };
      await expect(writer.put(hash, grant)).rejects.toMatchObject({ status: 503, code: 'redis_unavailable' });
      await expect(writer.delete({ hash, id: grant.id })).rejects.toMatchObject({
        status: 503,
        code: 'redis_unavailable',
      });
      await restartRedis(tag);
      await until(() => down.status === 'ready', 5_000);
      await writer.put(hash, grant);
      expect(await readSealed(down, redisKeys.apiKey(hash))).toEqual(grant);
    } finally {
      down.disconnect();
    }
  });
});

describe('workflow routes', () => {
  let url: string;
  let client: Redis;
  let routes: WorkflowRoutes;
  const wf = (name: string): string => `${name}-${Math.random().toString(36).slice(2, 8)}`;
  beforeAll(async () => {
    url = (await redis()).url;
    client = await connected(url);
    routes = new WorkflowRoutes(client, await testVerifier());
  });
  afterAll(() => client.disconnect());

  it("writes a route the gateway reads, announces it, and removes only its own writer's", async () => {
    const replica = await listen(url, redisChannels.routes);
    try {
      const workflow = wf('fraud');
      const writer = new RouteWriter(client, await testSealer());
      const key = redisKeys.bdaRoute(workflow, 'scorer');
      const route = { url: 'http://127.0.0.1:9001', owner: 'alice', workflow, source: 'service/a/scorer' };
      expect(await writer.put(key, route)).toBe(true);
      expect(await readSealed(client, key)).toEqual(route);
      await until(() => replica.messages.includes(routeChangeTag(key)));
      // The channel names no route: a listener learns nothing it could not name itself.
      expect(replica.messages.join()).not.toContain(workflow);
      // The same value again changes nothing and announces nothing.
      expect(await writer.put(key, route)).toBe(false);
      // Another resource's removal leaves the route alone.
      expect(await writer.remove(key, 'service/b/scorer')).toBe(false);
      expect(await client.exists(key)).toBe(1);
      expect(await writer.remove(key, 'service/a/scorer')).toBe(true);
      expect(await client.exists(key)).toBe(0);
      const tag = routeChangeTag(key);
      await until(() => replica.messages.filter((m) => m === tag).length >= 2);
      expect(replica.messages.filter((m) => m === tag)).toHaveLength(2);
    } finally {
      replica.close();
    }
  });

  it('removes every workflow route one source wrote, under any key but those it keeps, and no other source’s', async () => {
    const writer = new RouteWriter(client, await testSealer());
    const source = `model/team-${Math.random().toString(36).slice(2, 8)}/scorer`;
    const [old1, old2, current, others] = [wf('old'), wf('older'), wf('now'), wf('theirs')].map((w) =>
      redisKeys.bdaRoute(w, 'scorer'),
    ) as [string, string, string, string];
    const route = (extra: object = {}) => ({
      url: 'http://10.96.0.7:8080',
      owner: 'alice',
      source,
      ...extra,
    });
    for (const key of [old1, old2, current]) await writer.put(key, route());
    // Another writer's route that merely mentions the source is its own.
    await writer.put(others, { ...route(), source: `${source}-2`, workflow: source });
    expect(await writer.removeAllOf(source, new Set([current]))).toBe(2);
    expect(await client.exists(old1, old2)).toBe(0);
    expect(await client.exists(current, others)).toBe(2);
    // Nothing of the source left to find but what it keeps.
    expect(await writer.removeAllOf(source, new Set([current]))).toBe(0);
    expect(await writer.removeAllOf(source)).toBe(1);
    expect(await client.exists(current, others)).toBe(1);
  });

  it('a rebuild rewrites every route (repairing seals) but announces only those that changed', async () => {
    const replica = await listen(url, redisChannels.routes);
    try {
      const writer = new RouteWriter(client, await testSealer());
      const [same, moved] = [wf('same'), wf('moved')].map((w) => redisKeys.bdaRoute(w, 'scorer')) as [
        string,
        string,
      ];
      const route = { url: 'http://10.96.0.8:8080', owner: 'alice', source: 'service/a/scorer' };
      for (const key of [same, moved]) await writer.put(key, route);
      await until(() => replica.messages.length >= 2);
      replica.messages.length = 0;
      const before = await client.get(same);
      writer.rewriteAll(true);
      expect(await writer.put(same, route)).toBe(true);
      expect(await writer.put(moved, { ...route, url: 'http://10.96.0.9:8080' })).toBe(true);
      writer.rewriteAll(false);
      // Written again (a new seal), yet told to no one; the moved one is.
      expect(await client.get(same)).not.toBe(before);
      await until(() => replica.messages.includes(routeChangeTag(moved)));
      await new Promise((r) => setTimeout(r, 100));
      expect(replica.messages).toEqual([routeChangeTag(moved)]);
    } finally {
      replica.close();
    }
  });

  it('finds what earlier writers left with one scan a term, however many sources ask', async () => {
    const source = (n: number) => `service/team-${n}/left-${Math.random().toString(36).slice(2, 8)}`;
    const earlier = new RouteWriter(client, await testSealer());
    const sources = [source(1), source(2), source(3)];
    for (const [i, s] of sources.entries())
      await earlier.put(redisKeys.bdaRoute(wf(`left${i}`), 'svc'), {
        url: 'http://10.96.0.10:80',
        owner: 'alice',
        source: s,
      });
    const writer = new RouteWriter(client, await testSealer());
    // One this writer puts after its scan is found too.
    const later = redisKeys.bdaRoute(wf('later'), 'svc');
    const scans = jest.spyOn(client, 'scan');
    try {
      expect(await writer.removeAllOf(sources[0]!)).toBe(1);
      await writer.put(later, { url: 'http://10.96.0.11:80', owner: 'alice', source: sources[1]! });
      expect(await writer.removeAllOf(sources[1]!)).toBe(2);
      expect(await writer.removeAllOf(sources[2]!)).toBe(1);
      expect(await writer.removeAllOf(`service/none/${Math.random()}`)).toBe(0);
      const scanned = scans.mock.calls.length;
      // The whole keyspace walked once (a SCAN a page), not once per source.
      expect(scanned).toBeGreaterThan(0);
      await writer.removeAllOf(sources[0]!);
      expect(scans.mock.calls.length).toBe(scanned);
    } finally {
      scans.mockRestore();
    }
  });

  it('lists the workflows a user owns, and never one shared with another owner', async () => {
    const owner = `owner-${Math.random().toString(36).slice(2, 8)}`;
    const mine = wf('mine');
    const theirs = wf('theirs');
    await putWorkflowRoute(client, { workflow: mine, service: 'b', url: 'http://127.0.0.1:9002', owner });
    await putWorkflowRoute(client, { workflow: mine, service: 'a', url: 'http://127.0.0.1:9003', owner });
    await putWorkflowRoute(client, {
      workflow: theirs,
      service: 'a',
      url: 'http://127.0.0.1:9004',
      owner: 'someone-else',
    });
    // A workflow with one service of another owner is nobody's to choose.
    await putWorkflowRoute(client, { workflow: theirs, service: 'b', url: 'http://127.0.0.1:9005', owner });
    expect(await routes.ownedBy(owner)).toEqual([{ workflow: mine, services: ['a', 'b'] }]);
  });

  it('believes a route naming the caller only if its seal verifies, and checks no other route’s seal', async () => {
    const own = await connected((await redis('owned-routes')).url);
    try {
      const verifier = await testVerifier();
      const table = new WorkflowRoutes(own, verifier);
      for (let i = 0; i < 20; i++)
        await putWorkflowRoute(own, {
          workflow: `theirs-${i}`,
          service: 'a',
          url: 'http://127.0.0.1:9010',
          owner: 'bob',
        });
      await putWorkflowRoute(own, {
        workflow: 'mine',
        service: 'a',
        url: 'http://127.0.0.1:9011',
        owner: 'alice',
      });
      await putWorkflowRoute(own, {
        workflow: 'forged',
        service: 'a',
        url: 'http://127.0.0.1:9012',
        owner: 'bob',
      });
      // bob's route rewritten to name alice, its seal left as it was: it no longer verifies.
      const key = redisKeys.bdaRoute('forged', 'a');
      const sealed = (await own.get(key))!;
      await own.set(key, sealed.replace('"owner":"bob"', '"owner":"alice"'));
      const opened = jest.spyOn(verifier, 'open');
      try {
        expect(await table.ownedBy('alice')).toEqual([{ workflow: 'mine', services: ['a'] }]);
        expect(opened).toHaveBeenCalledTimes(2);
      } finally {
        opened.mockRestore();
      }
    } finally {
      own.disconnect();
    }
  });

  it('counts an unreadable route entry as another owner’s instead of failing every listing', async () => {
    // Its own Redis: the corrupt entry must not reach the other tests' scans.
    const own = await connected((await redis('corrupt-route')).url);
    try {
      const table = new WorkflowRoutes(own, await testVerifier());
      const owner = 'alice';
      await putWorkflowRoute(own, { workflow: 'healthy', service: 'a', url: 'http://127.0.0.1:9006', owner });
      await putWorkflowRoute(own, { workflow: 'damaged', service: 'a', url: 'http://127.0.0.1:9007', owner });
      await own.set(redisKeys.bdaRoute('damaged', 'b'), '{not json');
      await own.set(redisKeys.bdaRoute('damaged', 'c'), '{"owner": 42}');
      expect(await table.ownedBy(owner)).toEqual([{ workflow: 'healthy', services: ['a'] }]);
    } finally {
      own.disconnect();
    }
  });
});
