import { Redis } from 'ioredis';
import { RedisKeptNames } from '../../../operator/controllers/model/kept-names.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { redis } from '../../harness/index.js';
import { testSealer, testVerifier } from '../signing.js';

describe('names kept for deleted Models’ namespaces, in Redis', () => {
  let client: Redis;
  beforeAll(async () => {
    // Its own Redis: other suites' operators keep names too.
    client = new Redis((await redis('kept-names')).url);
  });
  afterAll(() => client.disconnect());

  it('outlive the process that kept them, until their time is up; one not sealed by the operator is not believed', async () => {
    const writer = new RedisKeptNames(client, await testSealer(), await testVerifier());
    const now = Date.now();
    await writer.keep({
      name: 'model-iris',
      namespace: 'team-a',
      until: now + 60_000,
      since: 1_700_000_000_000,
    });
    await writer.keep({ name: 'model-brief', namespace: 'team-b', until: now + 300, since: 1 });
    // Already over: nothing to keep.
    await writer.keep({ name: 'model-over', namespace: 'team-c', until: now - 1, since: 1 });
    // Sealed once, put back after its time (no TTL): over all the same.
    const stale = redisKeys.keptModelName('model-stale');
    const sealer = await testSealer();
    await client.set(
      stale,
      await sealer.seal(stale, JSON.stringify({ namespace: 'team-d', until: now - 1_000, since: 1 })),
    );
    // Written by someone who may write Redis but holds no signing key.
    await client.set(
      redisKeys.keptModelName('model-squat'),
      JSON.stringify({ namespace: 'team-m', until: now + 60_000, since: 0 }),
    );
    const ttl = await client.pttl(redisKeys.keptModelName('model-iris'));
    // Its expiry is its `until` (60 s on), less however long this test took to get here.
    expect(ttl).toBeGreaterThan(30_000);
    expect(ttl).toBeLessThanOrEqual(60_000);

    const reader = new RedisKeptNames(client, await testSealer(), await testVerifier());
    expect((await reader.load()).sort((a, b) => (a.name < b.name ? -1 : 1))).toEqual([
      { name: 'model-brief', namespace: 'team-b', until: now + 300, since: 1 },
      { name: 'model-iris', namespace: 'team-a', until: now + 60_000, since: 1_700_000_000_000 },
    ]);
    await new Promise((r) => setTimeout(r, 400));
    expect(await reader.load()).toEqual([
      { name: 'model-iris', namespace: 'team-a', until: now + 60_000, since: 1_700_000_000_000 },
    ]);
  });
});
