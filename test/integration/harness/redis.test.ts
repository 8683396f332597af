import { Redis } from 'ioredis';
import { createConnection } from 'node:net';
import { redis, restartRedis, stopRedis } from '../../harness/index.js';

function tcpConnect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    sock.once('connect', () => {
      sock.destroy();
      resolve();
    });
    sock.once('error', reject);
  });
}

describe('harness: redis', () => {
  it('round-trips a value through the file’s own instance', async () => {
    const info = await redis();
    expect(info.url).toBe(`redis://127.0.0.1:${info.port}`);
    const client = new Redis(info.url);
    try {
      await client.set('harness:smoke', 'hello', 'EX', 60);
      expect(await client.get('harness:smoke')).toBe('hello');
      // Throw-away means nothing is persisted.
      expect(await client.config('GET', 'save')).toEqual(['save', '']);
      expect(await client.config('GET', 'appendonly')).toEqual(['appendonly', 'no']);
    } finally {
      client.disconnect();
    }
  });

  it('gives a tagged instance that can be stopped and restarted empty', async () => {
    const own = await redis('harness-smoke');
    const shared = await redis();
    expect(own.port).not.toBe(shared.port);

    const client = new Redis(own.url, {
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      lazyConnect: true,
    });
    await client.connect();
    await client.set('k', 'v');
    client.disconnect();

    await stopRedis('harness-smoke');
    await expect(tcpConnect(own.port)).rejects.toThrow(/ECONNREFUSED/);

    const back = await restartRedis('harness-smoke');
    expect(back.port).toBe(own.port);
    const again = new Redis(back.url);
    try {
      expect(await again.get('k')).toBeNull();
    } finally {
      again.disconnect();
    }
  });
});
