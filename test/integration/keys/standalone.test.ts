import { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { execFile } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import express from 'express';
import { Redis } from 'ioredis';
import { hashKey } from '../../../common/apikey/format.js';
import { RoleCatalogue } from '../../../common/apikey/roles.js';
import { createLogger } from '../../../common/logger.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { createManagement } from '../../../gateway/api/management.js';
import { JWKS_PATH } from '../../../gateway/auth/local-issuer.js';
import { redis } from '../../harness/index.js';
import { removeTempDirs, tempDir } from './fixtures.js';

afterAll(removeTempDirs);

const run = promisify(execFile);
const TSX = new URL('../../../node_modules/tsx/dist/cli.mjs', import.meta.url).pathname;
const CLI = new URL('../../../cli/main.ts', import.meta.url).pathname;

/**
 * Standalone mode end to end: a token minted by the `tollgate token` CLI from the state directory
 * is accepted by a gateway on the same directory, through the JWKS that gateway serves; the key it
 * creates lands as a manifest there and in the Redis index. A workflow registered with
 * `tollgate route add` is offered for bda keys.
 */
describe('standalone management API with the CLI', () => {
  let server: Server;
  let base: string;
  let stateDir: string;
  let client: Redis;
  let redisUrl: string;

  beforeAll(async () => {
    stateDir = await tempDir('tollgate-standalone-');
    redisUrl = (await redis()).url;
    client = new Redis(redisUrl);
    const app = express();
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const management = await createManagement({
      redis: client,
      workflows: new WorkflowRoutes(client),
      log: createLogger('standalone-test', 'silent'),
      roles: new RoleCatalogue(),
      keys: { stateDir },
      identity: { local: { stateDir, selfUrl: base } },
    });
    if (management.jwks !== undefined) app.get(JWKS_PATH, management.jwks);
    app.use('/api/v1', management.router);
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    client.disconnect();
  });

  const cli = async (...args: string[]): Promise<string> =>
    (
      await run(process.execPath, [TSX, CLI, ...args], {
        env: { ...process.env, TOLLGATE_STATE_DIR: stateDir, TOLLGATE_REDIS_URL: redisUrl },
      })
    ).stdout;

  it('accepts a CLI token and creates keys for the CLI-registered workflow', async () => {
    const user = `dana-${Math.random().toString(36).slice(2, 8)}`;
    const workflow = `wf-${Math.random().toString(36).slice(2, 8)}`;
    const token = (await cli('token', '--user', user)).trim();
    await cli(
      'route',
      'add',
      '--workflow',
      workflow,
      '--service',
      'api',
      '--url',
      'http://127.0.0.1:9',
      '--owner',
      user,
    );

    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const jwks = (await (await fetch(`${base}${JWKS_PATH}`)).json()) as {
      keys: Array<Record<string, unknown>>;
    };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).not.toHaveProperty('d');

    const modules = (await (await fetch(`${base}/api/v1/modules`, { headers })).json()) as {
      modules: Array<{ module: string; roles: Array<{ id: string }> }>;
    };
    expect(modules.modules.find((m) => m.module === 'bda')?.roles.map((r) => r.id)).toEqual([workflow]);

    const res = await fetch(`${base}/api/v1/apikeys`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ module: 'bda', roles: [workflow], name: 'from the CLI token' }),
    });
    expect(res.status).toBe(201);
    const created = (await res.json()) as { id: string; key: string };
    expect(JSON.parse((await client.get(redisKeys.apiKey(hashKey(created.key)))) ?? '{}')).toMatchObject({
      owner: user,
      roles: [workflow],
    });
    const listed = (await (await fetch(`${base}/api/v1/apikeys`, { headers })).json()) as {
      items: Array<{ id: string }>;
    };
    expect(listed.items.map((k) => k.id)).toEqual([created.id]);
  });

  it('rejects a token whose user flag is missing, and nothing is minted', async () => {
    await expect(cli('token')).rejects.toMatchObject({ code: 1 });
    await expect(cli('token', '--user', '')).rejects.toMatchObject({ code: 2 });
  });
});
