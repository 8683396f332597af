// A Sentinel-managed Redis: a primary, two replicas and three Sentinels (Debian's redis-server run
// with --sentinel), loopback only, nothing on disk but the Sentinels' own config files, which
// they rewrite as they learn.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bins } from '../paths.js';
import { freePort } from '../../../common/net/free-port.js';
import { throwawayRedisArgs } from '../../../common/redis/throwaway-args.js';
import type { Managed, ProcessRegistry } from '../processes.js';
import { startRedis } from './redis.js';
import { waitUntil } from '../wait.js';
import { createConnection } from 'node:net';

export const SENTINEL_PRIMARY_NAME = 'tollgate';

export interface SentinelGroup {
  /** redis+sentinel://127.0.0.1:<s1>,...,/<name> */
  url: string;
  name: string;
  /** Data nodes by port (the first started as the primary). */
  nodes: Map<number, Managed>;
  sentinels: Map<number, Managed>;
}

/** One RESP command over a raw socket; resolves with the raw reply. */
function raw(port: number, command: string): Promise<string> {
  return new Promise((resolve) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    let out = '';
    sock.setTimeout(1000);
    sock.once('connect', () => sock.write(`${command}\r\n`));
    sock.on('data', (b) => {
      out += b.toString();
      if (out.endsWith('\r\n')) {
        sock.destroy();
        resolve(out);
      }
    });
    sock.once('error', () => resolve(''));
    sock.once('timeout', () => {
      sock.destroy();
      resolve(out);
    });
  });
}

export async function startSentinelGroup(
  reg: ProcessRegistry,
  runDir: string,
  tag: string,
): Promise<SentinelGroup> {
  const primary = await startRedis(reg, `sentinel-${tag}-node-a`);
  const replicas = new Map<number, Managed>();
  for (const letter of ['b', 'c']) {
    const port = await freePort();
    const proc = reg.spawn(
      `sentinel-${tag}-node-${letter}`,
      bins.redisServer,
      [...throwawayRedisArgs(port), '--replicaof', '127.0.0.1', String(primary.port)],
      { stopTimeoutMs: 5000 },
    );
    await waitUntil(
      `replica on ${port} in sync`,
      async () => (await raw(port, 'INFO replication')).includes('master_link_status:up'),
      { timeoutMs: 15_000, proc, intervalMs: 100 },
    );
    replicas.set(port, proc);
  }
  const dir = join(runDir, `sentinel-${tag}`);
  await mkdir(dir, { recursive: true });
  const sentinels = new Map<number, Managed>();
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const conf = join(dir, `sentinel-${i}.conf`);
    // Quick to decide, as a test needs: down after 1 s, a failover may take 3 s.
    await writeFile(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${SENTINEL_PRIMARY_NAME} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_PRIMARY_NAME} 1000`,
        `sentinel failover-timeout ${SENTINEL_PRIMARY_NAME} 3000`,
        `sentinel parallel-syncs ${SENTINEL_PRIMARY_NAME} 1`,
        '',
      ].join('\n'),
    );
    const proc = reg.spawn(`sentinel-${tag}-${i}`, bins.redisServer, [conf, '--sentinel'], {
      stopTimeoutMs: 5000,
    });
    await waitUntil(`sentinel on ${port}`, async () => (await raw(port, 'PING')).startsWith('+PONG'), {
      timeoutMs: 10_000,
      proc,
      intervalMs: 50,
    });
    sentinels.set(port, proc);
  }
  // Every Sentinel knows the replica and the other Sentinels before a test may kill anything.
  for (const port of sentinels.keys()) {
    await waitUntil(
      `sentinel ${port} sees the group`,
      async () => {
        const info = await raw(port, `SENTINEL MASTER ${SENTINEL_PRIMARY_NAME}`);
        const numbers = (field: string): number => {
          const m = new RegExp(`\\$\\d+\\r\\n${field}\\r\\n\\$\\d+\\r\\n(\\d+)`).exec(info);
          return Number(m?.[1] ?? -1);
        };
        return numbers('num-slaves') >= 2 && numbers('num-other-sentinels') >= 2;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  }
  return {
    url: `redis+sentinel://${[...sentinels.keys()].map((p) => `127.0.0.1:${p}`).join(',')}/${SENTINEL_PRIMARY_NAME}`,
    name: SENTINEL_PRIMARY_NAME,
    nodes: new Map([[primary.port, primary.proc], ...replicas]),
    sentinels,
  };
}
