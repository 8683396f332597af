import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { UpstreamPools } from '../../../gateway/proxy/upstream-pools.js';

/**
 * A server that answers the first request on each connection and keeps it alive, then closes the
 * connection when a second request arrives on it: the race a keep-alive client meets when the
 * other side drops an idle connection just as it is reused.
 */
function droppingServer(): Promise<{
  origin: string;
  connections: () => number;
  close: () => Promise<void>;
}> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    let answered = false;
    socket.on('data', () => {
      if (answered) {
        socket.destroy();
        return;
      }
      answered = true;
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nok');
    });
    socket.on('close', () => sockets.delete(socket));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        connections: () => connections,
        close: () =>
          new Promise((r) => {
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
      }),
    ),
  );
}

describe('UpstreamPools', () => {
  const options = { connections: 1, connectTimeoutMs: 1_000, upstreamTimeoutMs: 2_000 };

  it('sends an idempotent GET once more when a kept-alive connection was dropped as it was reused', async () => {
    const server = await droppingServer();
    const pools = new UpstreamPools(options);
    try {
      const get = async () => {
        const res = await pools.idempotent(server.origin).request({ method: 'GET', path: '/ready' });
        return [res.statusCode, await res.body.text()];
      };
      expect(await get()).toEqual([200, 'ok']);
      expect(await get()).toEqual([200, 'ok']);
      expect(server.connections()).toBe(2);
    } finally {
      await pools.close();
      await server.close();
    }
  });

  it('sends a proxied request once: the same race is the caller’s error, not a second request', async () => {
    const server = await droppingServer();
    const pools = new UpstreamPools(options);
    try {
      const first = await pools.get(server.origin).request({ method: 'GET', path: '/x' });
      await first.body.dump();
      await expect(pools.get(server.origin).request({ method: 'GET', path: '/x' })).rejects.toThrow();
      expect(server.connections()).toBe(1);
    } finally {
      await pools.close();
      await server.close();
    }
  });
});
