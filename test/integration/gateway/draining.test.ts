import { redis } from '../../harness/index.js';
import { send, startGateway, type TestGateway } from './support.js';

/** A replica shutting down leaves its load balancer by either readiness probe. */
describe('a draining gateway', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway({ redisUrl: (await redis()).url });
  });

  afterAll(async () => {
    await gw.stop();
  });

  it('answers not ready on /readyz and on /v2/health/ready alike; live all the same', async () => {
    expect((await send(gw.url, '/v2/health/ready')).json).toEqual({ ready: true });
    expect((await send(gw.url, '/readyz')).status).toBe(200);
    gw.services.draining = true;
    try {
      const v2 = await send(gw.url, '/v2/health/ready');
      expect([v2.status, v2.json]).toEqual([503, { ready: false }]);
      expect((await send(gw.url, '/readyz')).json.code).toBe('shutting_down');
      expect((await send(gw.url, '/v2/health/live')).json).toEqual({ live: true });
    } finally {
      gw.services.draining = false;
    }
  });
});
