import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { createLogger } from '../../../common/logger.js';
import { freePort } from '../../../common/net/free-port.js';
import { Activator } from '../../../gateway/v2/activator.js';

/** A loopback server answering every request with `status`. */
async function answering(status: number): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(status, status >= 300 && status < 400 ? { location: '/' } : {});
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('Activator.firstReady', () => {
  // Asking starting replicas needs no Redis: only the wake-up does.
  const activator = new Activator({} as unknown as Redis, createLogger('test', 'silent'));
  const servers: Server[] = [];
  afterAll(async () => {
    await activator.close();
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
    }
  });

  it('takes the first replica whose probe passes (2xx or 3xx, as the kubelet counts it) and whose serving port takes a connection', async () => {
    const [ok, redirect, notReady, serving] = await Promise.all([
      answering(200),
      answering(302),
      answering(503),
      answering(404),
    ]);
    servers.push(ok.server, redirect.server, notReady.server, serving.server);
    const closed = `http://127.0.0.1:${await freePort()}`;
    const replica = (probe: string, origin: string) => ({
      origin,
      basePath: '',
      probe: `${probe}/v2/models/m/ready`,
      until: Date.now() + 60_000,
    });

    const notYet = replica(notReady.origin, serving.origin);
    const ready = replica(ok.origin, serving.origin);
    expect(await activator.firstReady([notYet, ready])).toBe(ready);
    const redirected = replica(redirect.origin, serving.origin);
    expect(await activator.firstReady([redirected])).toBe(redirected);

    // Its probe passes but nothing listens where the calls would go: not taken.
    expect(await activator.firstReady([replica(ok.origin, closed)])).toBeUndefined();
    // Its probe does not answer at all (nothing listens): not taken, and soon.
    const started = Date.now();
    expect(await activator.firstReady([replica(closed, serving.origin), notYet])).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await activator.firstReady([])).toBeUndefined();
  });
});

describe('Activator.hold', () => {
  it("waits no longer than the platform's bound (maxActivationWaitSeconds), whatever the Model asks", async () => {
    const published: string[] = [];
    const redis = { publish: async (_channel: string, message: string) => void published.push(message) };
    const activator = new Activator(redis as unknown as Redis, createLogger('test', 'silent'), 1_000);
    // The Model asks for ten minutes; nothing ever wakes.
    const held = activator.hold('model-sleepy', '', 600_000, async () => undefined);
    await expect(held).rejects.toMatchObject({ code: 'model_scaling_up', status: 503 });
    await expect(held).rejects.toThrow(/none was ready within 1 s/);
    expect(JSON.parse(published[0] ?? '{}')).toEqual({ model: 'model-sleepy', version: '' });
  });
});
