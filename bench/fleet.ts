import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { redisKeys } from '../common/redis/schema.js';
import { RouteWriter } from '../common/routes/workflow-routes.js';
import { freePort } from '../common/net/free-port.js';
import { LOCAL_AUDIENCE, LOCAL_ISSUER, LocalIssuer } from '../gateway/auth/local-issuer.js';
import { TEST_SIGNING_KEY_FILE, testSealer } from '../test/integration/signing.js';
import { CLI, memoryMiB, start, stop, UPSTREAM, waitFor } from './support.js';

/**
 * The management API and the data plane at a platform's scale, on the keys `scale.ts` made: many
 * gateway processes (`tollgate gateway`, each its own process) on one Redis and the harness API
 * server, the first of them serving the management API to a user who owns 1,000 of the keys and to
 * an administrator. Measures a user's listing and search, an administrator's search over every
 * key, how long a revoked key keeps working anywhere after its DELETE is answered, and whether one
 * key's rate limit holds exactly across all the gateways.
 */
export interface FleetFigures {
  gateways: number;
  firstListSeconds: number;
  userList: number[];
  userSearch: number[];
  adminSearch: number[];
  revocation: number[];
  rateLimit: { limit: number; sent: number; accepted: number };
  managementRss: number;
  gatewayRss: number[];
}

const WORKFLOW = 'scale-wf';
const ADMINS = 'bench-admins';

/**
 * `tollgate gateway` as a real process on loopback, on the bench's API server and Redis, with the
 * test signing key (a central gateway's); `extra` adds settings.
 */
export function startGateway(
  name: string,
  o: { kubeconfig: string; redisUrl: string; namespace: string },
  port: number,
  extra: NodeJS.ProcessEnv = {},
): ReturnType<typeof start> {
  return start(name, process.execPath, [CLI, 'gateway'], {
    NODE_OPTIONS: '',
    LOG_LEVEL: 'warn',
    KUBECONFIG: o.kubeconfig,
    TOLLGATE_HOST: '127.0.0.1',
    TOLLGATE_PORT: String(port),
    TOLLGATE_REDIS_URL: o.redisUrl,
    TOLLGATE_NAMESPACE: o.namespace,
    TOLLGATE_GRANT_SIGNING_KEY_FILE: TEST_SIGNING_KEY_FILE,
    ...extra,
  });
}

export async function fleet(o: {
  kubeconfig: string;
  redisUrl: string;
  namespace: string;
  /** A user who owns keys among those made. */
  owner: string;
  gateways: number;
  rounds: number;
}): Promise<FleetFigures> {
  const work = await mkdtemp(path.join(tmpdir(), 'tollgate-bench-fleet-'));
  const redis = new Redis(o.redisUrl);
  const agent = new Agent({ connections: 64 });
  const procs: Array<ReturnType<typeof start>> = [];
  let jwks: Server | undefined;
  try {
    const upstreamPort = await freePort();
    procs.push(start('upstream', process.execPath, ['-e', UPSTREAM], { PORT: String(upstreamPort) }));
    await waitFor(`http://127.0.0.1:${upstreamPort}/`);

    // The workflow's record names the user its owner (the management API makes keys for it), and
    // its route, as the operator writes it for a labelled Service, sends calls to the upstream.
    const kc = new KubeConfig();
    kc.loadFromFile(o.kubeconfig);
    await kc.makeApiClient(CustomObjectsApi).createClusterCustomObject({
      group: 'tollgate.dev',
      version: 'v1alpha1',
      plural: 'workflows',
      body: {
        apiVersion: 'tollgate.dev/v1alpha1',
        kind: 'Workflow',
        metadata: { name: WORKFLOW },
        spec: { workflow: WORKFLOW, owner: o.owner, namespaces: [o.namespace] },
      },
    });
    await new RouteWriter(redis, await testSealer()).put(redisKeys.bdaRoute(WORKFLOW, 'svc'), {
      url: `http://127.0.0.1:${upstreamPort}`,
      owner: o.owner,
      workflow: WORKFLOW,
    });

    const issuer = await LocalIssuer.open(work);
    jwks = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(issuer.jwks));
    });
    await new Promise<void>((r) => jwks?.listen(0, '127.0.0.1', r));
    const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/`;

    const ports = await Promise.all(Array.from({ length: o.gateways }, () => freePort()));
    for (const [i, port] of ports.entries())
      procs.push(
        startGateway(`gateway ${i}`, o, port, {
          // The first serves the management API (and keeps the watched copy of every key); the
          // others only the data plane, as replicas behind a Service would all do both.
          ...(i === 0
            ? {
                TOLLGATE_OIDC_ISSUER: LOCAL_ISSUER,
                TOLLGATE_OIDC_AUDIENCE: LOCAL_AUDIENCE,
                TOLLGATE_OIDC_JWKS_URL: jwksUrl,
                TOLLGATE_ADMIN_GROUPS: ADMINS,
              }
            : {}),
        }),
      );
    const bases = ports.map((p) => `http://127.0.0.1:${p}`);
    // Twenty processes starting at once share two cores: a minute, not the usual 20 s.
    for (const base of bases) await waitFor(`${base}/healthz`, {}, 200, 120_000);
    const api = `${bases[0]}/api/v1`;
    const user = { authorization: `Bearer ${await issuer.mint(o.owner, { ttlSeconds: 3600 })}` };
    const admin = {
      authorization: `Bearer ${await issuer.mint('bench-admin', { ttlSeconds: 3600, groups: [ADMINS] })}`,
    };

    const call = async (
      url: string,
      headers: Record<string, string>,
      method: 'GET' | 'POST' | 'DELETE' = 'GET',
      body?: unknown,
    ): Promise<{ status: number; json: Record<string, unknown> }> => {
      const res = await request(url, {
        method,
        dispatcher: agent,
        headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.body.text();
      return {
        status: res.statusCode,
        json: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : {},
      };
    };
    const timed = async (url: string, headers: Record<string, string>): Promise<number> => {
      const began = performance.now();
      const { status } = await call(url, headers);
      if (status !== 200) throw new Error(`${url} answered ${status}`);
      return performance.now() - began;
    };

    // The management API starts its watch of the keys with the gateway: the first listing waits
    // for the watch's first list if it is not in yet.
    const firstListSeconds = (await timed(`${api}/apikeys?limit=50`, user)) / 1000;
    const userList: number[] = [];
    const userSearch: number[] = [];
    const adminSearch: number[] = [];
    for (let i = 0; i < o.rounds; i++) {
      userList.push(await timed(`${api}/apikeys?limit=50`, user));
      userSearch.push(await timed(`${api}/apikeys?search=${(i % 256).toString(16).padStart(2, '0')}`, user));
      adminSearch.push(await timed(`${api}/admin/apikeys?search=user-${i % 100}`, admin));
    }

    const callEverywhere = (key: string) =>
      Promise.all(
        bases.map(
          async (base) =>
            (await call(`${base}/events/bda/${WORKFLOW}/svc/`, { authorization: `Apikey ${key}` })).status,
        ),
      );
    const create = async (extra: Record<string, unknown> = {}) => {
      const made = await call(`${api}/apikeys`, user, 'POST', { module: 'bda', roles: [WORKFLOW], ...extra });
      if (made.status !== 201) throw new Error(`creating a key answered ${made.status}`);
      return { id: made.json.id as string, key: made.json.key as string };
    };

    const revocation: number[] = [];
    for (let i = 0; i < o.rounds; i++) {
      const { id, key } = await create();
      const warm = await callEverywhere(key);
      if (warm.some((s) => s !== 200)) throw new Error(`a new key was refused: ${warm.join(' ')}`);
      const deleted = await call(`${api}/apikeys/${id}`, user, 'DELETE');
      if (deleted.status !== 204) throw new Error(`DELETE answered ${deleted.status}`);
      const answered = performance.now();
      const refusedAt = await Promise.all(
        bases.map(async (base) => {
          for (;;) {
            const { status } = await call(`${base}/events/bda/${WORKFLOW}/svc/`, {
              authorization: `Apikey ${key}`,
            });
            if (status === 401) return performance.now() - answered;
            if (performance.now() - answered > 5000) throw new Error('a revoked key still works after 5 s');
            // Twenty pollers calling flat out would take the two cores from the gateways.
            await new Promise((r) => setTimeout(r, 1));
          }
        }),
      );
      revocation.push(Math.max(...refusedAt));
    }

    // A day's window: the run does not straddle two unless it runs across midnight UTC.
    const limit = 300;
    const { key } = await create({ rateLimit: { requests: limit, windowSeconds: 86_400 } });
    const sent = limit * 3;
    let next = 0;
    let accepted = 0;
    await Promise.all(
      Array.from({ length: 60 }, async () => {
        while (next < sent) {
          const base = bases[next++ % bases.length];
          const { status } = await call(`${base}/events/bda/${WORKFLOW}/svc/`, {
            authorization: `Apikey ${key}`,
          });
          if (status === 200) accepted++;
          else if (status !== 429) throw new Error(`a rate-limited call answered ${status}`);
        }
      }),
    );

    const rss = procs.slice(1).map((p) => memoryMiB(p.pid ?? 0).rss);
    return {
      gateways: o.gateways,
      firstListSeconds,
      userList,
      userSearch,
      adminSearch,
      revocation,
      rateLimit: { limit, sent, accepted },
      managementRss: rss[0] ?? NaN,
      gatewayRss: rss.slice(1),
    };
  } finally {
    await Promise.all(procs.map((p) => stop(p)));
    await new Promise((r) => (jwks ? jwks.close(r) : r(undefined)));
    await agent.close();
    redis.disconnect();
    await rm(work, { recursive: true, force: true });
  }
}

/** The q-quantile (0..1) of samples, nearest rank. */
export function quantile(samples: readonly number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
}
