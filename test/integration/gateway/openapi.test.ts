// The OpenAPI document is generated from the zod schemas the handlers validate with, and a real
// fuzzer (schemathesis, from PyPI) holds a live gateway to it: no server error, no status, content
// type or body the document does not allow.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { markIndexBuilt } from '../workflow-route.js';
import { createLogger } from '../../../common/logger.js';
import { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { createManagement } from '../../../gateway/api/management.js';
import { LocalIssuer } from '../../../gateway/auth/local-issuer.js';
import { loadGatewayConfig } from '../../../gateway/config.js';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../../gateway/config/webhook-settings.js';
import type { GatewayServer } from '../../../gateway/server.js';
import { type SharedServices } from '../../../gateway/services.js';
import { noModels } from '../../../gateway/v2/model-directory.js';
import { repoRoot } from '../../harness/paths.js';
import { freePort, redis } from '../../harness/index.js';
import { startUpstream, type Upstream } from './support.js';
import { TEST_SIGNING_KEY_FILE } from '../signing.js';
import { buildCentralGateway } from '../../../gateway/central-gateway.js';

const SCHEMATHESIS = join(repoRoot, '.venv-tools', 'bin', 'schemathesis');
const log = createLogger('openapi-test', 'silent');

let stateDir: string;
let client: Redis;
let upstream: Upstream;
let gateway: GatewayServer;
let base: string;
let token: string;
let document: {
  openapi: string;
  paths: Record<
    string,
    Record<string, { requestBody?: { content: Record<string, { schema: Record<string, unknown> }> } }>
  >;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
};

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'tollgate-openapi-'));
  const r = await redis('openapi');
  client = new Redis(r.url);
  // As the operator marks it once it has listed every key: imports read "no entry" as "no key".
  await markIndexBuilt(client);
  upstream = await startUpstream();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const config = loadGatewayConfig({
    env: {},
    overrides: {
      grantSigningKeyFile: TEST_SIGNING_KEY_FILE,
      redisUrl: r.url,
      port,
      host: '127.0.0.1',
      upstreams: { datasets: upstream.url },
      auditUri: pathToFileURL(join(stateDir, 'audit')).href,
    },
  });
  const management = ({ roles, audit, trust }: SharedServices) =>
    createManagement({
      trust,
      redis: client,
      workflows: new WorkflowRoutes(client, trust.verifier),
      log,
      roles,
      audit,
      maxRollGraceSeconds: config.maxRollGraceSeconds,
      keys: { stateDir },
      identity: { local: { stateDir, selfUrl: base } },
      // The fuzzer calls as fast as it can: paced, most of its calls would only be 429s.
      managementCallsPerSecond: 100_000,
      // The fuzzer is an administrator, so the admin routes are exercised too.
      admin: { groupsClaim: 'groups', adminGroups: ['tollgate-admins'] },
      // The endpoints it registers may name only this host, which nothing listens on: no webhook
      // leaves the machine, nor looks a name up.
      webhooks: {
        ...DEFAULT_WEBHOOK_SETTINGS,
        allowedHosts: ['127.0.0.2'],
        allowedCidrs: ['127.0.0.2/32'],
        allowHttp: true,
      },
    });
  gateway = await buildCentralGateway(config, log, { models: noModels, management });
  await gateway.listen(port, '127.0.0.1');
  token = await (await LocalIssuer.open(stateDir)).mint('fuzz@example.com', { groups: ['tollgate-admins'] });
  const res = await fetch(`${base}/api/v1/openapi.json`);
  expect(res.status).toBe(200);
  document = (await res.json()) as typeof document;
});

afterAll(async () => {
  await gateway?.shutdown();
  await upstream?.close();
  client?.disconnect();
  await rm(stateDir, { recursive: true, force: true });
});

function schemathesis(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      SCHEMATHESIS,
      [
        'run',
        `${base}/api/v1/openapi.json`,
        '--url',
        base,
        '--checks',
        'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
        '--max-examples',
        '30',
        '--workers',
        '1',
        '--seed',
        '1',
        ...args,
      ],
      // Hypothesis keeps its example database in the working directory: not in the repository.
      { cwd: stateDir, maxBuffer: 32 << 20, timeout: 240_000, env: { ...process.env, NO_COLOR: '1' } },
      (err, stdout, stderr) =>
        resolve({
          code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1,
          output: stdout + stderr,
        }),
    );
  });
}

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1, describes every management operation and parts of /v2 and /events', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths).sort()).toEqual([
      '/api/v1/admin/apikeys',
      '/api/v1/admin/apikeys/import',
      '/api/v1/admin/apikeys/{id}',
      '/api/v1/admin/apikeys/{id}/credits',
      '/api/v1/admin/apikeys/{id}/limits',
      '/api/v1/admin/identities/{name}/credits',
      '/api/v1/admin/identities/{name}/limits',
      '/api/v1/admin/offboard',
      '/api/v1/admin/usage/export',
      '/api/v1/apikeys',
      '/api/v1/apikeys/{id}',
      '/api/v1/apikeys/{id}/roll',
      '/api/v1/apikeys/{id}/usage',
      '/api/v1/audit',
      '/api/v1/identities',
      '/api/v1/identities/{name}',
      '/api/v1/leaked-keys',
      '/api/v1/me',
      '/api/v1/models',
      '/api/v1/modules',
      '/api/v1/webhooks',
      '/api/v1/webhooks/{id}',
      '/api/v1/webhooks/{id}/deliveries',
      '/api/v1/webhooks/{id}/deliveries/{delivery}/replay',
      '/api/v1/webhooks/{id}/rotate-secret',
      '/events/platform/api/v1/{resource}',
      '/v2/health/live',
      '/v2/health/ready',
      '/v2/models/{name}',
      '/v2/models/{name}/infer',
    ]);
    expect(Object.keys(document.paths['/api/v1/apikeys/{id}'] ?? {}).sort()).toEqual(['delete', 'get']);
  });

  it('is generated from the schemas the code validates with', () => {
    // The create body: the zod schema's fields and bounds, not a hand-written copy.
    const create = document.paths['/api/v1/apikeys']?.['post']?.requestBody?.content['application/json']
      ?.schema as {
      properties: Record<string, { maxItems?: number; maxLength?: number }>;
      additionalProperties: boolean;
    };
    expect(Object.keys(create.properties).sort()).toEqual(
      [
        'allowedCidrs',
        'credits',
        'expiresAt',
        'identity',
        'limits',
        'models',
        'module',
        'name',
        'rateLimit',
        'roles',
      ].sort(),
    );
    expect(create.properties['roles']?.maxItems).toBe(32);
    expect(create.properties['name']?.maxLength).toBe(100);
    expect(create.additionalProperties).toBe(false);
    // The roll body carries this gateway's own limit.
    const roll = document.paths['/api/v1/apikeys/{id}/roll']?.['post']?.requestBody?.content[
      'application/json'
    ]?.schema as { properties: { gracePeriodSeconds: { maximum: number } } };
    expect(roll.properties.gracePeriodSeconds.maximum).toBe(7 * 86_400);
    expect(Object.keys(document.components.schemas['ApiKey']?.properties ?? {})).toEqual(
      expect.arrayContaining(['rolled', 'rolledFrom', 'allowedCidrs', 'state', 'refusalCount']),
    );
  });
});

describe('schemathesis against a live gateway', () => {
  it('finds no server error and no answer outside the document in the management API', async () => {
    const run = await schemathesis([
      '--include-path-regex',
      '^/api/v1/',
      '--header',
      `Authorization: Bearer ${token}`,
    ]);
    expect({ code: run.code, output: run.output.slice(-6_000) }).toMatchObject({ code: 0 });
    // It did call the API, many times.
    expect(run.output).toMatch(/\d+ passed/);
  }, 300_000);

  it('finds none on /v2 and /events with a key', async () => {
    const created = await fetch(`${base}/api/v1/apikeys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ module: 'platform', roles: ['viewer', 'models:inference'] }),
    });
    const { key } = (await created.json()) as { key: string };
    const run = await schemathesis([
      '--include-path-regex',
      '^/(v2|events)/',
      '--header',
      `Authorization: Apikey ${key}`,
    ]);
    expect({ code: run.code, output: run.output.slice(-6_000) }).toMatchObject({ code: 0 });
  }, 300_000);
});
