import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpstreamPools } from '../../../gateway/proxy/upstream-pools.js';

const options = { connections: 2, connectTimeoutMs: 1_000, upstreamTimeoutMs: 5_000 };

describe('UpstreamPools', () => {
  it('lets go of a pool with nothing open nor waiting, and keeps one with a call in flight', async () => {
    const held: ServerResponse[] = [];
    const server = createServer((_req, res) => void held.push(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const pools = new UpstreamPools(options);
    try {
      // An origin called once long ago (a replica started from zero, at its pod's address).
      const idle = pools.get('http://127.0.0.1:9');
      // Asked for a moment ago: a caller may be about to try it again.
      pools.dropIdle(60_000);
      expect(pools.get('http://127.0.0.1:9')).toBe(idle);
      await new Promise((resolve) => setTimeout(resolve, 5));
      pools.dropIdle(1);
      expect(pools.get('http://127.0.0.1:9')).not.toBe(idle);

      const busy = pools.get(origin);
      const answer = busy.request({ method: 'GET', path: '/' });
      while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 5));
      pools.dropIdle(1);
      expect(pools.get(origin)).toBe(busy);
      held[0]?.end('done');
      expect(await (await answer).body.text()).toBe('done');
    } finally {
      await pools.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
