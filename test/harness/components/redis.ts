// A throw-away redis-server: loopback only, no RDB snapshots, no AOF, so nothing reaches disk.
import { createConnection } from 'node:net';
import { bins } from '../paths.js';
import { freePort } from '../../../common/net/free-port.js';
import { throwawayRedisArgs } from '../../../common/redis/throwaway-args.js';
import type { Managed, ProcessRegistry } from '../processes.js';
import { waitUntil } from '../wait.js';

export interface RedisInstance {
  url: string;
  port: number;
  proc: Managed;
}

/** Sends PING over a raw socket; ioredis is not needed in the manager for this. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolvePing) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    sock.setTimeout(1000);
    sock.once('connect', () => sock.write('PING\r\n'));
    sock.once('data', (buf) => {
      sock.destroy();
      resolvePing(buf.toString().startsWith('+PONG'));
    });
    sock.once('error', () => resolvePing(false));
    sock.once('timeout', () => {
      sock.destroy();
      resolvePing(false);
    });
  });
}

/** Starts redis-server; `port` is given when restarting a stopped instance on its old port. */
export async function startRedis(reg: ProcessRegistry, name: string, port?: number): Promise<RedisInstance> {
  const p = port ?? (await freePort());
  const proc = reg.spawn(name, bins.redisServer, throwawayRedisArgs(p), { stopTimeoutMs: 5000 });
  await waitUntil(`redis ${name} on port ${p}`, () => ping(p), { timeoutMs: 10_000, proc, intervalMs: 50 });
  return { url: `redis://127.0.0.1:${p}`, port: p, proc };
}
