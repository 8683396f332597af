import { redisKeys } from '../../../common/redis/schema.js';
import { redis } from '../../harness/index.js';
import { waitUntil } from '../../harness/wait.js';
import { testSealer } from '../signing.js';
import { redisClient, startGateway, type TestGateway } from './support.js';

/**
 * A route the gateway looked for and did not find is remembered as missing until the routes
 * channel says it changed (or a second passes): a route written meanwhile, its notice still on the
 * way, is found when asked again, as a call about to be refused for the want of it asks.
 */
describe('a route remembered as missing', () => {
  let gw: TestGateway;
  let r: ReturnType<typeof redisClient>;

  beforeAll(async () => {
    const info = await redis('route-cache');
    r = redisClient(info.url);
    // As the operator marks a complete index: without it a miss is "retry", not "no".
    await r.set(redisKeys.indexMarker, new Date().toISOString());
    gw = await startGateway({ redisUrl: info.url });
    // Nothing is remembered until the change channel is live.
    await waitUntil('the change channel is live', async () => gw.services.invalidation.live, {
      timeoutMs: 10_000,
      intervalMs: 10,
    });
  });

  afterAll(async () => {
    await gw.stop();
    r.disconnect();
  });

  it('is read again when asked to recheck, and only then', async () => {
    const routes = gw.services.routes;
    // Calls refused at once share one read.
    const first = routes.model('model-other', true);
    expect(routes.model('model-other', true)).toBe(first);
    expect(await first).toBeNull();
    const key = redisKeys.modelRoute('model-late');
    expect(await routes.model('model-late')).toBeNull();
    // Written, sealed, and not announced: the notice has not come yet.
    const payload = JSON.stringify({ url: 'http://127.0.0.1:9/late', source: 'model/models/model-late' });
    await r.set(key, await (await testSealer()).seal(key, payload));
    expect(await routes.model('model-late')).toBeNull();
    expect((await routes.model('model-late', true))?.origin).toBe('http://127.0.0.1:9');
    // Found so, it is remembered as found.
    expect((await routes.model('model-late'))?.basePath).toBe('/late');
  });
});
