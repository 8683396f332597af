import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { redisTls, type RedisTlsInfo } from '../../harness/index.js';
import { spawnGateway, type GatewayProcess } from './process.js';
import {
  apikey,
  createKey,
  deleteKey,
  registerService,
  startUpstream,
  uniqueName,
  type Upstream,
} from './support.js';

/**
 * Redis as a managed service runs it: TLS only, no anonymous user, one ACL user with a password.
 * The gateway (a real process) reaches it with a `rediss://user:password@...` URL and the CA given
 * to Node (NODE_EXTRA_CA_CERTS, as a pod mounts it); without the CA, or with a wrong password, it
 * fails closed.
 */
let info: RedisTlsInfo;
let client: Redis;
let upstream: Upstream;
const running: GatewayProcess[] = [];
const wf = uniqueName('wf-tls');

async function gateway(url: string, trustCa: boolean): Promise<GatewayProcess> {
  const proc = await spawnGateway({
    TOLLGATE_REDIS_URL: url,
    LOG_LEVEL: 'warn',
    ...(trustCa ? { NODE_EXTRA_CA_CERTS: info.caFile } : {}),
  });
  running.push(proc);
  return proc;
}

async function call(gw: GatewayProcess, key: string): Promise<{ status: number; code?: string }> {
  const res = await fetch(`${gw.url}/events/bda/${wf}/svc/hello`, { headers: apikey(key) });
  const text = await res.text();
  return {
    status: res.status,
    ...(res.status === 200 ? {} : { code: (JSON.parse(text) as { code: string }).code }),
  };
}

beforeAll(async () => {
  info = await redisTls('gateway');
  client = new Redis(info.url, { tls: { ca: readFileSync(info.caFile) }, maxRetriesPerRequest: 1 });
  upstream = await startUpstream();
  await registerService(client, wf, 'svc', upstream.url);
});

afterAll(async () => {
  for (const proc of running) {
    if (proc.child.exitCode === null) {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
  }
  client?.disconnect();
  await upstream?.close();
});

describe('Redis over TLS with an ACL user', () => {
  it('checks keys, follows revocations and reports ready, all over TLS', async () => {
    const gw = await gateway(info.url, true);
    expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);
    const created = await createKey(client, 'bda', [wf]);
    expect(await call(gw, created.key)).toEqual({ status: 200 });
    // The invalidation channel runs over the same TLS connection setup: a delete is seen at once.
    await deleteKey(client, { hash: created.hash, id: created.grant.id });
    let answer = await call(gw, created.key);
    for (let i = 0; i < 20 && answer.status === 200; i++) answer = await call(gw, created.key);
    expect(answer).toEqual({ status: 401, code: 'unknown_api_key' });
  });

  it('fails closed, never open, without the CA, with a wrong password or with none', async () => {
    const created = await createKey(client, 'bda', [wf]);
    const refused = await Promise.all([
      gateway(info.url, false),
      gateway(info.url.replace(`:${info.password}@`, ':not-the-password@'), true),
      gateway(`rediss://127.0.0.1:${info.port}`, true),
    ]);
    for (const gw of refused) {
      expect((await fetch(`${gw.url}/readyz`)).status).toBe(503);
      expect(await call(gw, created.key)).toEqual({ status: 503, code: 'redis_unavailable' });
    }
  });
});
