import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { Redis } from 'ioredis';
import { generateKey, hashKey, keyStart } from '../../../common/apikey/format.js';
import { DirApiKeyStore } from '../../../common/apikey/dir-store.js';
import { openKeyFile } from '../../../common/crypto/key-file.js';
import { createLogger } from '../../../common/logger.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { newApiKey, newKeyId } from '../../../common/resources/apikey.js';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import { OperatorManager } from '../../../operator/manager.js';
import { LocalMlserverDriver } from '../../../operator/serving/local-mlserver.js';
import { standaloneSources } from '../../../operator/standalone-sources.js';
import { ProcessEnvCredentials } from '../../../operator/storage/credentials.js';
import { redis } from '../../harness/index.js';
import { TEST_SIGNING_KEY_FILE } from '../signing.js';
import { countKeys } from './support.js';

/**
 * The index marker says "every entry is here": a Redis emptied while the operator builds the
 * index (a flush, a restart, a failover to an empty replica) must never end with the marker set
 * over what is left, or every gateway would answer 401 unknown_api_key to valid keys for good.
 */
const KEYS = 1500;

describe('the index marker', () => {
  let dir: string;
  let client: Redis;
  let operator: OperatorManager | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-marker-'));
    const store = new DirApiKeyStore(new ManifestDir(dir, () => undefined));
    for (let i = 0; i < KEYS; i++) {
      const key = generateKey('bda');
      await store.create(
        newApiKey(newKeyId(), {
          hash: hashKey(key),
          start: keyStart(key),
          module: 'bda',
          roles: ['wf'],
          owner: 'alice',
        }),
      );
    }
    client = new Redis((await redis('index-marker')).url, { maxRetriesPerRequest: 1 });
  }, 120_000);

  /** The standalone operator over the directory's ApiKeys (no model runs here), on `redisUrl`. */
  const standaloneOperator = (redisUrl: string): OperatorManager => {
    const log = createLogger('marker-operator', 'silent');
    const runtime = new LocalMlserverDriver({
      mlserver: '/nonexistent/mlserver',
      workDir: path.join(dir, 'runtimes'),
      credentials: new ProcessEnvCredentials(),
      log,
    });
    const manifests = new ManifestDir(dir, () => undefined);
    return new OperatorManager(() => standaloneSources(manifests, runtime, log), {
      redisUrl,
      log,
      indexCheckMs: 200,
      signingKey: () => openKeyFile(TEST_SIGNING_KEY_FILE),
    });
  };

  afterAll(async () => {
    await operator?.stop();
    client?.disconnect();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['after the first entries', 1],
    ['half-way', KEYS / 2],
    ['after the last entry', KEYS],
  ])(
    'is never set over an index that Redis lost while it was built: emptied %s',
    async (_when, written) => {
      await operator?.stop();
      await client.flushall();
      operator = standaloneOperator((await redis('index-marker')).url);
      await operator.start();
      const deadline = Date.now() + 30_000;
      while ((await countKeys(client, 'tg:key:*')) < written) {
        if (Date.now() > deadline) throw new Error('the operator did not write the entries');
        await new Promise((r) => setTimeout(r, 2));
      }
      // Emptied while the build is under way (or, if it was quicker, just after it).
      await client.flushall();
      // Whenever the marker is there, every entry is.
      const until = Date.now() + 60_000;
      for (;;) {
        const marked = (await client.exists(redisKeys.indexMarker)) === 1;
        const entries = await countKeys(client, 'tg:key:*');
        if (marked) {
          expect(entries).toBe(KEYS);
          break;
        }
        if (Date.now() > until) throw new Error(`no marker after 60 s (${entries} entries)`);
        await new Promise((r) => setTimeout(r, 20));
      }
      // And it stays so.
      await new Promise((r) => setTimeout(r, 1000));
      expect(await countKeys(client, 'tg:key:*')).toBe(KEYS);
    },
    120_000,
  );

  it('a connection that stops answering (a primary lost with its node) is dropped, and the index rebuilt on the new one', async () => {
    await operator?.stop();
    await client.flushall();
    const target = new URL((await redis('index-marker')).url);
    // Between the operator and Redis: forwards each connection until told to swallow the open
    // ones (packets dropped, no reset, as when a node goes away); new connections go through.
    const open = new Set<{ client: Socket; upstream: Socket }>();
    const proxy: Server = createServer((c) => {
      const upstream = createConnection(Number(target.port), target.hostname);
      const pair = { client: c, upstream };
      open.add(pair);
      c.pipe(upstream);
      upstream.pipe(c);
      const end = () => {
        open.delete(pair);
        c.destroy();
        upstream.destroy();
      };
      c.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const port = (proxy.address() as { port: number }).port;
    operator = standaloneOperator(`redis://127.0.0.1:${port}`);
    try {
      await operator.start();
      const built = Date.now() + 60_000;
      while ((await client.exists(redisKeys.indexMarker)) !== 1) {
        if (Date.now() > built) throw new Error('no first build');
        await new Promise((r) => setTimeout(r, 50));
      }
      // The old connections go silent, and Redis is empty (the new primary, reached anew).
      for (const pair of open) {
        pair.client.unpipe(pair.upstream);
        pair.upstream.unpipe(pair.client);
        pair.client.removeAllListeners('data');
      }
      await client.flushall();
      const deadline = Date.now() + 60_000;
      while ((await client.exists(redisKeys.indexMarker)) !== 1) {
        if (Date.now() > deadline)
          throw new Error('the operator never noticed its connection had gone silent');
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await countKeys(client, 'tg:key:*')).toBe(KEYS);
    } finally {
      await operator.stop();
      operator = undefined;
      for (const pair of open) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      await new Promise((r) => proxy.close(r));
    }
  }, 120_000);
});
