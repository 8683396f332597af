import { Redis } from 'ioredis';
import { redisChannels, redisKeys } from '../../../common/redis/schema.js';
import { RouteWriter } from '../../../common/routes/workflow-routes.js';
import { redis } from '../../harness/index.js';
import { testSealer } from '../signing.js';
import { markIndexBuilt } from '../workflow-route.js';
import { apikey, createKey, redisClient, send, startGateway, type TestGateway } from './support.js';

/**
 * Every check that can refuse a V2 call runs before the activator: a key over its rate limit gets
 * its 429 at once, and wakes no model scaled to zero on the way.
 */
describe('V2 admission before activation', () => {
  const model = 'model-cold-admission';
  let gw: TestGateway;
  let r: Redis;
  let listener: Redis;
  const wakes: string[] = [];

  beforeAll(async () => {
    const info = await redis('v2-admission');
    r = redisClient(info.url);
    listener = new Redis(info.url);
    await listener.subscribe(redisChannels.modelWake);
    listener.on('message', (_channel: string, message: string) => wakes.push(message));
    // As the operator writes it for a model its autoscaler took to zero.
    await new RouteWriter(r, await testSealer()).put(redisKeys.modelRoute(model), {
      url: 'http://127.0.0.1:9',
      source: `model/test/${model}`,
      cold: true,
      activationTimeoutSeconds: 5,
    });
    await markIndexBuilt(r);
    gw = await startGateway({ redisUrl: info.url });
  });

  afterAll(async () => {
    await gw.stop();
    listener.disconnect();
    r.disconnect();
  });

  it('answers a key over its limit 429 before any activation, and wakes nothing', async () => {
    const { key } = await createKey(r, 'platform', ['models:inference'], {
      rateLimit: { requests: 1, windowSeconds: 60 },
    });
    // Its one call of the window: readiness, which never wakes a model.
    const ready = await send(gw.url, `/v2/models/${model}/ready`, { headers: apikey(key) });
    expect(ready.status).toBe(200);
    const over = await send(gw.url, `/v2/models/${model}/infer`, {
      method: 'POST',
      headers: { ...apikey(key), 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP64', shape: [1], data: [1] }] }),
    });
    expect([over.status, over.json.code]).toEqual([429, 'rate_limited']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(wakes).toEqual([]);
  });
});
