// The component manager lives in the Jest parent process (global setup) and owns every
// component process. Test workers ask it over loopback HTTP to start what they need; the first
// request starts a component, later ones share it. Only what the selected tests ask for starts.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { startCluster } from './components/cluster.js';
import { startKube } from './components/kube.js';
import { startDex } from './components/dex.js';
import { startMinio } from './components/minio.js';
import { startMlserver, type MlserverInstance, type MlserverOptions } from './components/mlserver.js';
import { startRedis, type RedisInstance } from './components/redis.js';
import { startRedisTls } from './components/redis-tls.js';
import { startPrometheus } from './components/prometheus.js';
import { startNginx, startTraefik } from './components/auth-proxies.js';
import { startOtelCollector } from './components/otel-collector.js';
import { startSentinelGroup, type SentinelGroup } from './components/sentinel.js';
import { ProcessRegistry } from './processes.js';
import { waitUntil } from './wait.js';
import type {
  ClusterInfo,
  DexInfo,
  DexOptions,
  KubeInfo,
  MinioInfo,
  MlserverInfo,
  RedisInfo,
  RedisTlsInfo,
  SentinelInfo,
} from './types.js';

type Body = Record<string, unknown>;

/** Runs a command inside the cluster node's network namespace. */
const inNode =
  (c: ClusterInfo) =>
  (command: string, args: string[]): [string, string[]] => [
    'nsenter',
    [`--net=/run/netns/${c.netns}`, '--', command, ...args],
  ];

// One connection per request. A worker whose event loop was blocked (a synchronous child
// process, a long computation) would otherwise reuse a keep-alive socket the server had already
// closed, and its next request would fail with ECONNRESET. A handful of requests per run makes
// the extra connections free.
const JSON_NO_KEEPALIVE = { 'content-type': 'application/json', connection: 'close' };

function str(body: Body, key: string): string {
  const v = body[key];
  if (typeof v !== 'string' || v === '') throw new Error(`"${key}" must be a non-empty string`);
  return v;
}

function redisName(tag: string): string {
  return `redis-${tag.replace(/[^A-Za-z0-9_.-]/g, '_')}`;
}

export class ComponentManager {
  private readonly reg: ProcessRegistry;
  private readonly redises = new Map<string, { port: number; running?: Promise<RedisInstance> }>();
  private kubeP?: Promise<KubeInfo>;
  private clusterP?: Promise<ClusterInfo>;
  private clusterMinioP?: Promise<MinioInfo>;
  private clusterServers = 0;
  private minioP?: Promise<MinioInfo>;
  private readonly mlservers = new Map<string, MlserverInstance>();
  private readonly sentinelGroups = new Map<string, Promise<SentinelGroup>>();
  private readonly dexes = new Map<string, Promise<DexInfo>>();
  private readonly redisTlses = new Map<string, Promise<RedisTlsInfo>>();
  private mlserverSeq = 0;
  private server?: Server;

  constructor(private readonly runDir: string) {
    this.reg = new ProcessRegistry(runDir);
  }

  async listen(): Promise<string> {
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const addr = server.address();
    if (addr === null || typeof addr === 'string') throw new Error('manager: no address');
    return `http://127.0.0.1:${addr.port}`;
  }

  async shutdown(): Promise<void> {
    this.server?.close();
    this.server?.closeAllConnections();
    await this.reg.stopAll();
  }

  killAllSync(): void {
    this.reg.killAllSync();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const raw = Buffer.concat(chunks).toString();
      const body = (raw === '' ? {} : JSON.parse(raw)) as Body;
      const out = await this.route(req.method ?? 'GET', req.url ?? '/', body);
      res.writeHead(200, JSON_NO_KEEPALIVE).end(JSON.stringify(out ?? {}));
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      res.writeHead(500, JSON_NO_KEEPALIVE).end(JSON.stringify({ error: message }));
    }
  }

  private route(method: string, path: string, body: Body): Promise<unknown> {
    if (method !== 'POST') throw new Error(`manager: use POST, not ${method}`);
    switch (path) {
      case '/redis':
        return this.redis(str(body, 'tag'));
      case '/redis/stop':
        return this.stopRedis(str(body, 'tag'));
      case '/redis/restart':
        return this.restartRedis(str(body, 'tag'));
      case '/prometheus':
        return startPrometheus(this.reg, this.runDir, str(body, 'tag'), body['targets'] as string[]);
      case '/nginx':
        return startNginx(this.reg, this.runDir, str(body, 'tag'), str(body, 'conf'));
      case '/traefik':
        return startTraefik(this.reg, this.runDir, str(body, 'tag'), str(body, 'dynamic'));
      case '/otel-collector':
        return startOtelCollector(this.reg, this.runDir, str(body, 'tag'));
      case '/redis-tls':
        return this.redisTls(str(body, 'tag'));
      case '/redis-sentinel':
        return this.sentinelGroup(str(body, 'tag'));
      case '/redis-sentinel/kill':
        return this.killInGroup(str(body, 'tag'), Number(str(body, 'port')));
      case '/kube':
        this.kubeP ??= startKube(this.reg, this.runDir);
        return this.kubeP;
      case '/cluster':
        return this.cluster();
      case '/cluster/serve':
        return this.serveInCluster(str(body, 'dir'));
      case '/cluster/minio':
        this.clusterMinioP ??= this.startClusterMinio();
        return this.clusterMinioP;
      case '/minio':
        this.minioP ??= startMinio(this.reg, this.runDir);
        return this.minioP;
      case '/dex':
        return this.dex(str(body, 'tag'), body['options'] as DexOptions);
      case '/mlserver/start':
        return this.startMlserver(str(body, 'modelsDir'), (body['options'] ?? {}) as MlserverOptions);
      case '/mlserver/stop':
        return this.stopMlserver(str(body, 'id'));
      default:
        throw new Error(`manager: unknown path ${path}`);
    }
  }

  private async redis(tag: string): Promise<RedisInfo> {
    let entry = this.redises.get(tag);
    if (entry === undefined) {
      const running = startRedis(this.reg, redisName(tag));
      entry = { port: 0, running };
      this.redises.set(tag, entry);
      // A failed start is forgotten, so the next test may try again.
      running.catch(() => this.redises.delete(tag));
    }
    if (entry.running === undefined) {
      throw new Error(`redis "${tag}" is stopped; call restartRedis("${tag}") to bring it back`);
    }
    const inst = await entry.running;
    entry.port = inst.port;
    return { url: inst.url, port: inst.port, tag };
  }

  private async stopRedis(tag: string): Promise<Body> {
    const entry = this.redises.get(tag);
    if (entry?.running === undefined) return {};
    const inst = await entry.running;
    entry.running = undefined;
    await inst.proc.stop();
    return {};
  }

  /** Stops (if running) and starts again on the same port, empty: "Redis restarted". */
  private async restartRedis(tag: string): Promise<RedisInfo> {
    const entry = this.redises.get(tag);
    if (entry === undefined) return this.redis(tag);
    await this.stopRedis(tag);
    entry.running = startRedis(this.reg, redisName(tag), entry.port);
    const inst = await entry.running;
    return { url: inst.url, port: inst.port, tag };
  }

  /** A TLS-only Redis per tag. */
  private redisTls(tag: string): Promise<RedisTlsInfo> {
    let running = this.redisTlses.get(tag);
    if (running === undefined) {
      running = startRedisTls(this.reg, this.runDir, tag);
      this.redisTlses.set(tag, running);
      running.catch(() => this.redisTlses.delete(tag));
    }
    return running;
  }

  /** A Dex per tag, started once with the options of its first caller. */
  private dex(tag: string, options: DexOptions): Promise<DexInfo> {
    let running = this.dexes.get(tag);
    if (running === undefined) {
      running = startDex(this.reg, this.runDir, tag, options);
      this.dexes.set(tag, running);
      running.catch(() => this.dexes.delete(tag));
    }
    return running;
  }

  private async sentinelGroup(tag: string): Promise<SentinelInfo> {
    let group = this.sentinelGroups.get(tag);
    if (group === undefined) {
      group = startSentinelGroup(this.reg, this.runDir, tag);
      this.sentinelGroups.set(tag, group);
      group.catch(() => this.sentinelGroups.delete(tag));
    }
    const g = await group;
    return { url: g.url, name: g.name, nodes: [...g.nodes.keys()], sentinels: [...g.sentinels.keys()] };
  }

  /** SIGKILL, as a crash: the process on `port` (a data node or a Sentinel) of the group. */
  private async killInGroup(tag: string, port: number): Promise<Body> {
    const g = await this.sentinelGroups.get(tag);
    const proc = g?.nodes.get(port) ?? g?.sentinels.get(port);
    if (proc === undefined) throw new Error(`no process on port ${port} in sentinel group "${tag}"`);
    if (!proc.hasExited()) process.kill(proc.pid, 'SIGKILL');
    await proc.exited;
    return {};
  }

  /** A MinIO inside the cluster's node namespace: pods and the host both reach it there. */
  private async startClusterMinio(): Promise<MinioInfo> {
    const c = await this.cluster();
    return startMinio(this.reg, this.runDir, {
      name: 'cluster-minio',
      host: c.nodeIp,
      port: 9000,
      wrap: inNode(c),
    });
  }

  /**
   * Serves a directory over HTTP from inside the node's namespace (Python's http.server), where
   * pods and the host both reach it: e.g. an identity provider's JWKS for the gateway pods.
   */
  private async serveInCluster(dir: string): Promise<{ url: string }> {
    const c = await this.cluster();
    const port = 8100 + this.clusterServers++;
    const proc = this.reg.spawn(
      `cluster-files-${port}`,
      ...inNode(c)('python3', ['-m', 'http.server', '--bind', c.nodeIp, '--directory', dir, String(port)]),
      { stopTimeoutMs: 2000 },
    );
    const url = `http://${c.nodeIp}:${port}`;
    await waitUntil(`file server ${url}`, async () => (await fetch(url)).status < 500, {
      timeoutMs: 15_000,
      proc,
    });
    return { url };
  }

  private cluster(): Promise<ClusterInfo> {
    this.clusterP ??= startCluster(this.reg, this.runDir);
    return this.clusterP;
  }

  private async startMlserver(
    modelsDir: string,
    options: MlserverOptions,
  ): Promise<MlserverInfo & { id: string }> {
    const id = `mlserver-${++this.mlserverSeq}`;
    const inst = await startMlserver(this.reg, this.runDir, id, modelsDir, options);
    this.mlservers.set(id, inst);
    return { id, url: inst.url, grpcPort: inst.grpcPort, metricsPort: inst.metricsPort };
  }

  private async stopMlserver(id: string): Promise<Body> {
    const inst = this.mlservers.get(id);
    this.mlservers.delete(id);
    await inst?.proc.stop();
    return {};
  }
}
