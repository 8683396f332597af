import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { sendAgainOnConnectionLoss } from '../../../gateway/proxy/send-again.js';
import { UpstreamPools } from '../../../gateway/proxy/upstream-pools.js';
import { freePort } from '../../../common/net/free-port.js';

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

describe('sendAgainOnConnectionLoss', () => {
  const options = { connections: 1, connectTimeoutMs: 1_000, upstreamTimeoutMs: 2_000 };

  it('sends a request once more when a kept-alive connection was dropped as it was reused', async () => {
    const server = await droppingServer();
    const pools = new UpstreamPools(options);
    try {
      const get = async () => {
        const res = await sendAgainOnConnectionLoss(() =>
          pools.get(server.origin).request({ method: 'GET', path: '/ready' }),
        );
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

  it('waits out a refused connection (a Service between endpoints) and sends once it listens', async () => {
    const port = await freePort();
    const pools = new UpstreamPools(options);
    let server: Server | undefined;
    // The runtime starts listening a while after the first try was refused.
    const late = setTimeout(() => {
      server = createServer((socket) =>
        socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok')),
      ).listen(port, '127.0.0.1');
    }, 400);
    try {
      const res = await sendAgainOnConnectionLoss(() =>
        pools.get(`http://127.0.0.1:${port}`).request({ method: 'GET', path: '/v2/models/m' }),
      );
      expect([res.statusCode, await res.body.text()]).toEqual([200, 'ok']);
    } finally {
      clearTimeout(late);
      await pools.close();
      await new Promise((r) => (server ? server.close(r) : r(undefined)));
    }
  });

  it('gives up on a refused connection at once when it has no pauses (a readiness check)', async () => {
    const port = await freePort();
    const pools = new UpstreamPools(options);
    const started = Date.now();
    try {
      await expect(
        sendAgainOnConnectionLoss(
          () => pools.get(`http://127.0.0.1:${port}`).request({ method: 'GET', path: '/ready' }),
          [],
        ),
      ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      expect(Date.now() - started).toBeLessThan(500);
    } finally {
      await pools.close();
    }
  });

  it('tries again when the connection never opened, refused or unreachable (a Service between endpoints), and not on other errors', async () => {
    const unopened = (code: string) => Object.assign(new Error(`connect ${code}`), { code });
    for (const code of ['ECONNREFUSED', 'EHOSTUNREACH']) {
      let tries = 0;
      const answer = await sendAgainOnConnectionLoss(async () => {
        tries += 1;
        if (tries < 3) throw unopened(code);
        return 'answered';
      }, [1, 1, 1]);
      expect([code, answer, tries]).toEqual([code, 'answered', 3]);
    }
    // A timeout may have reached the runtime: not sent again.
    let tries = 0;
    await expect(
      sendAgainOnConnectionLoss(async () => {
        tries += 1;
        throw unopened('UND_ERR_HEADERS_TIMEOUT');
      }, [1, 1]),
    ).rejects.toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(tries).toBe(1);
  });
});
