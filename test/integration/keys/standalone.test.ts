import { unusedAudit } from '../../harness/audit.js';
import { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
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
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import { OperatorManager } from '../../../operator/manager.js';
import { LocalMlserverDriver } from '../../../operator/serving/local-mlserver.js';
import { standaloneSources } from '../../../operator/standalone-sources.js';
import { ProcessEnvCredentials } from '../../../operator/storage/credentials.js';
import { redis } from '../../harness/index.js';
import { removeTempDirs, tempDir } from './fixtures.js';
import { testTrust, testVerifier, TEST_SIGNING_KEY_FILE, readSealed } from '../signing.js';
import { openKeyFile } from '../../../common/crypto/key-file.js';

afterAll(removeTempDirs);

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the operator');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const run = promisify(execFile);
const TSX = new URL('../../../node_modules/tsx/dist/cli.mjs', import.meta.url).pathname;
const CLI = new URL('../../../cli/main.ts', import.meta.url).pathname;

/**
 * Standalone mode end to end: a token minted by the `tollgate token` CLI from the state directory
 * is accepted by a gateway on the same directory, through the JWKS that gateway serves; the key it
 * creates lands as a manifest there and in the Redis index. A workflow registered with
 * `tollgate route add` is a Service manifest there, which the standalone operator routes: it is
 * then offered for bda keys, and `route remove` takes it away.
 */
describe('standalone management API with the CLI', () => {
  let server: Server;
  let base: string;
  let stateDir: string;
  let client: Redis;
  let redisUrl: string;
  let operator: OperatorManager;

  beforeAll(async () => {
    stateDir = await tempDir('tollgate-standalone-');
    redisUrl = (await redis()).url;
    client = new Redis(redisUrl);
    const app = express();
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const management = await createManagement({
      trust: await testTrust(),
      redis: client,
      workflows: new WorkflowRoutes(client, await testVerifier()),
      log: createLogger('standalone-test', 'silent'),
      roles: new RoleCatalogue(),
      audit: unusedAudit(),
      maxRollGraceSeconds: 3_600,
      keys: { stateDir },
      identity: { local: { stateDir, selfUrl: base } },
      admin: { groupsClaim: 'groups', adminGroups: [] },
    });
    if (management.jwks !== undefined) app.get(JWKS_PATH, management.jwks);
    app.use('/api/v1', management.router);
    const log = createLogger('standalone-operator', 'silent');
    const runtime = new LocalMlserverDriver({
      mlserver: '/nonexistent/mlserver', // no Model here: nothing is ever spawned
      workDir: `${stateDir}/runtimes`,
      credentials: new ProcessEnvCredentials(),
      log,
    });
    const manifests = new ManifestDir(stateDir, () => undefined);
    operator = new OperatorManager(() => standaloneSources(manifests, runtime, log), {
      redisUrl,
      log,
      signingKey: () => openKeyFile(TEST_SIGNING_KEY_FILE),
    });
    await operator.start();
  });
  afterAll(async () => {
    await operator.stop();
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

    const bdaRoles = async () => {
      const modules = (await (await fetch(`${base}/api/v1/modules`, { headers })).json()) as {
        modules: Array<{ module: string; roles: Array<{ id: string }> }>;
      };
      return modules.modules.find((m) => m.module === 'bda')?.roles.map((r) => r.id);
    };
    // The operator routes the manifest (it watches the directory).
    await until(async () => (await bdaRoles())?.includes(workflow) === true);
    expect(await bdaRoles()).toEqual([workflow]);
    expect(await readSealed(client, redisKeys.bdaRoute(workflow, 'api'))).toMatchObject({
      url: 'http://127.0.0.1:9',
      owner: user,
      workflow,
    });

    const res = await fetch(`${base}/api/v1/apikeys`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ module: 'bda', roles: [workflow], name: 'from the CLI token' }),
    });
    expect(res.status).toBe(201);
    const created = (await res.json()) as { id: string; key: string };
    expect((await readSealed(client, redisKeys.apiKey(hashKey(created.key)))) ?? {}).toMatchObject({
      owner: user,
      roles: [workflow],
    });
    const listed = (await (await fetch(`${base}/api/v1/apikeys`, { headers })).json()) as {
      items: Array<{ id: string }>;
    };
    expect(listed.items.map((k) => k.id)).toEqual([created.id]);
  });

  it('route add refuses another owner’s workflow and bad input with a clear message; remove unroutes', async () => {
    const workflow = `wf-${Math.random().toString(36).slice(2, 8)}`;
    const add = (owner: string, service: string, url = 'http://127.0.0.1:9') =>
      cli('route', 'add', '--workflow', workflow, '--service', service, '--url', url, '--owner', owner);
    expect(await add('erin', 'api')).toMatch(
      new RegExp(`^routed /events/bda/${workflow}/api/ .*services/.*\\.yaml\n$`),
    );
    await expect(add('mallory', 'other')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`workflow ${workflow} belongs to another owner`),
    });
    await expect(add('erin', 'api', 'file:///etc/passwd')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('url must be an http:// or https:// base URL'),
    });
    const key = redisKeys.bdaRoute(workflow, 'api');
    await until(async () => (await client.exists(key)) === 1);
    expect(await client.exists(redisKeys.bdaRoute(workflow, 'other'))).toBe(0);

    expect(await cli('route', 'remove', '--workflow', workflow, '--service', 'api')).toBe(
      `removed /events/bda/${workflow}/api/\n`,
    );
    await until(async () => (await client.exists(key)) === 0);
    await expect(cli('route', 'remove', '--workflow', workflow, '--service', 'api')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`no route for workflow ${workflow}, service api`),
    });
  });

  it('never makes a signing key: a directory without one is refused, naming the file, and stays empty', async () => {
    const elsewhere = await tempDir('tollgate-no-gateway-');
    const refused = await cli('token', '--user', 'alice', '--state-dir', elsewhere).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(refused?.code).toBe(1);
    expect(refused?.stderr).toContain(`no signing key at ${elsewhere}/signing-key.json`);
    expect(refused?.stderr).toContain('--state-dir of the running `tollgate dev`');
    expect(await readdir(elsewhere)).toEqual([]);
  });

  it('rejects a token whose user flag is missing, and nothing is minted', async () => {
    await expect(cli('token')).rejects.toMatchObject({ code: 1 });
    await expect(cli('token', '--user', '')).rejects.toMatchObject({ code: 2 });
  });
});
