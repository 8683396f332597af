import { noModels } from '../../../gateway/v2/model-directory.js';
import { markIndexBuilt, putWorkflowRoute } from '../workflow-route.js';
import { TEST_SIGNING_KEY_FILE, TEST_TRUSTED_KEYS, testSealer } from '../signing.js';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { request as httpRequest } from 'node:http';
import { Redis } from 'ioredis';
import { generateKey, hashKey } from '../../../common/apikey/format.js';
import { KeyIndexWriter } from '../../../common/apikey/index-writer.js';
import { createLogger } from '../../../common/logger.js';
import type { KeyGrant, Module } from '../../../common/resources/grant.js';
import { loadGatewayConfig, type GatewayConfigInput } from '../../../gateway/config.js';
import { type CentralGateway } from '../../../gateway/central-server.js';
import { createGatewayServices, type GatewayServices } from '../../../gateway/services.js';
import { buildCentralGateway } from '../../../gateway/central-gateway.js';

/** What a recording upstream saw: only requests whose body arrived completely. */
export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface Upstream {
  url: string;
  port: number;
  seen: Seen[];
  /** Requests that started but never completed (aborted uploads). */
  aborted: number;
  /** Replace the default answer (200, JSON echo of method and url). */
  respond: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;
  close(): Promise<void>;
}

/** A real node:http server on loopback that records what reaches it. */
export async function startUpstream(): Promise<Upstream> {
  const upstream: Upstream = {
    url: '',
    port: 0,
    seen: [],
    aborted: 0,
    respond: (req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ method: req.method, url: req.url }));
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let complete = false;
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      complete = true;
      const body = Buffer.concat(chunks);
      upstream.seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      upstream.respond(req, res, body);
    });
    req.on('close', () => {
      if (!complete) upstream.aborted++;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.port = (server.address() as AddressInfo).port;
  upstream.url = `http://127.0.0.1:${upstream.port}`;
  const closeAll = upstream.close;
  upstream.close = () => {
    server.closeAllConnections();
    return closeAll();
  };
  return upstream;
}

export interface TestGateway {
  url: string;
  services: GatewayServices;
  gateway: CentralGateway;
  stop(): Promise<void>;
}

/** The gateway in-process, on a free loopback port, with the given settings. */
export async function startGateway(
  settings: Partial<GatewayConfigInput>,
  /** Where its log lines go: nowhere unless a test reads them. */
  log = createLogger('gateway-test', 'silent'),
): Promise<TestGateway> {
  const config = loadGatewayConfig({
    env: {},
    overrides: {
      host: '127.0.0.1',
      port: 0,
      shutdownDrainMs: 0,
      grantSigningKeyFile: TEST_SIGNING_KEY_FILE,
      ...settings,
    },
  });
  // No model directory: these tests exercise /events and the management API.
  const gateway = await buildCentralGateway(config, log, { models: noModels });
  const address = await gateway.listen(0, '127.0.0.1');
  return {
    url: `http://127.0.0.1:${address.port}`,
    services: gateway.services,
    gateway,
    stop: () => gateway.shutdown(),
  };
}

/**
 * A sidecar's services, in-process: holding only the public keys (as the webhook gives a sidecar),
 * never the signing key.
 */
export async function sidecarServices(
  redisUrl: string,
  settings: Partial<GatewayConfigInput> = {},
): Promise<GatewayServices> {
  const config = loadGatewayConfig({
    env: {},
    overrides: {
      trustedKeys: TEST_TRUSTED_KEYS,
      host: '127.0.0.1',
      port: 0,
      redisUrl,
      shutdownDrainMs: 0,
      ...settings,
    },
  });
  return createGatewayServices(config, createLogger('sidecar-test', 'silent'));
}

let counter = 0;
/** A 20-hex-character id, unique in this run. */
export function newId(): string {
  counter++;
  return (Date.now().toString(16) + process.pid.toString(16) + counter.toString(16).padStart(4, '0'))
    .padStart(20, '0')
    .slice(-20);
}

/** A unique workflow or service id for one test. */
export const uniqueName = (prefix: string): string => `${prefix}-${newId().slice(-10)}`;

/** Creates a key index entry (through the keys code's writer) and returns the key. */
export async function createKey(
  redis: Redis,
  module: Module,
  roles: string[],
  extra: Partial<
    Pick<
      KeyGrant,
      'expiresAt' | 'rateLimit' | 'limits' | 'name' | 'owner' | 'models' | 'credits' | 'allowedCidrs'
    >
  > = {},
): Promise<{ key: string; grant: KeyGrant; hash: string }> {
  const key = generateKey(module);
  const grant: KeyGrant = { id: newId(), owner: 'alice', module, roles, ...extra };
  const hash = hashKey(key);
  await new KeyIndexWriter(redis, await testSealer()).put(hash, grant);
  await markIndexBuilt(redis);
  return { key, grant, hash };
}

export async function deleteKey(redis: Redis, entry: { hash: string; id: string }): Promise<void> {
  await new KeyIndexWriter(redis, await testSealer()).delete(entry);
}

export async function registerService(
  redis: Redis,
  workflow: string,
  service: string,
  url: string,
): Promise<void> {
  await putWorkflowRoute(redis, { workflow, service, url, owner: 'alice' });
}

export const apikey = (key: string): Record<string, string> => ({ authorization: `Apikey ${key}` });

export function redisClient(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 1 });
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: { error?: string; code?: string; field?: string } & Record<string, unknown>;
}

/**
 * One raw HTTP request (node:http sends the path exactly as given, where fetch would resolve
 * `..` and friends before they ever reached the gateway).
 */
export function send(
  base: string,
  path: string,
  opts: {
    method?: string;
    headers?: Record<string, string>;
    body?: Buffer | string | AsyncIterable<Buffer>;
  } = {},
): Promise<Answer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: hostname, port, path, method: opts.method ?? 'GET', headers: opts.headers ?? {}, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Answer['json'] = {};
          try {
            json = JSON.parse(text) as Answer['json'];
          } catch {
            // not JSON: leave json empty and let the test look at text
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    const body = opts.body;
    if (body === undefined) req.end();
    else if (typeof body === 'string' || Buffer.isBuffer(body)) req.end(body);
    else
      void (async () => {
        try {
          for await (const chunk of body) {
            if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
          }
          req.end();
        } catch (err) {
          req.destroy(err as Error);
        }
      })();
  });
}
