import { noModels } from '../../../gateway/v2/model-directory.js';
import { putWorkflowRoute } from '../workflow-route.js';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { generateKey, hashKey } from '../../../common/apikey/format.js';
import { KeyIndexWriter } from '../../../common/apikey/index-writer.js';
import { createLogger } from '../../../common/logger.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { loadGatewayConfig } from '../../../gateway/config.js';
import { createModelsResource } from '../../../gateway/platform/models/index.js';
import { KubeModelStore } from '../../../gateway/platform/models/kube-store.js';
import type { GatewayServer } from '../../../gateway/server.js';
import type { OperatorManager } from '../../../operator/manager.js';
import { redis } from '../../harness/index.js';
import {
  cluster,
  type Cluster,
  eventually,
  modelFolder,
  namespace,
  npSettings,
  removeModelFolders,
  setDeploymentReady,
  startOperator,
  createWorkflow,
  deleteWorkflow,
} from '../operator/support.js';
import { openSealed, testSealer, testVerifier, TEST_SIGNING_KEY_FILE } from '../signing.js';
import { buildCentralGateway } from '../../../gateway/central-gateway.js';

afterAll(removeModelFolders);

/**
 * A model published through the platform API into a user's workflow, then served by the real
 * operator (on the real API server, playing the kubelet's part): the workflow's route records its
 * owner, so the workflow stays the user's (the panel still offers it for bda keys) and the model is
 * reachable as one of its services.
 */
describe('models platform resource with the operator', () => {
  const log = createLogger('models-operator-test', 'silent');
  let c: Cluster;
  let ns: string;
  let client: Redis;
  let operator: OperatorManager;
  let gateway: GatewayServer;
  let base: string;
  let key: string;
  const workflow = `wf-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    c = await cluster();
    ns = await namespace(c, 'models-op');
    const redisUrl = (await redis('models-operator')).url;
    client = new Redis(redisUrl);
    operator = startOperator(c, ns, redisUrl);
    await operator.start();
    await operator.synced();

    // The administrator's record: alice's workflow, served from this namespace.
    await createWorkflow(c, workflow, 'alice', [ns]);
    await putWorkflowRoute(client, { workflow, service: 'api', url: 'http://127.0.0.1:9', owner: 'alice' });
    key = generateKey('platform');
    await new KeyIndexWriter(client, await testSealer()).put(hashKey(key), {
      id: randomBytes(10).toString('hex'),
      owner: 'alice',
      module: 'platform',
      roles: ['models:editor'],
    });
    const config = loadGatewayConfig({
      env: {},
      overrides: { grantSigningKeyFile: TEST_SIGNING_KEY_FILE, redisUrl, port: 0, host: '127.0.0.1' },
    });
    const handler = createModelsResource({
      store: new KubeModelStore(c.custom, ns),
      workflows: new WorkflowRoutes(client, await testVerifier()),
      log,
    });
    gateway = await buildCentralGateway(config, log, {
      models: noModels,
      platformResources: () => new Map([['models', handler]]),
    });
    base = `http://127.0.0.1:${(await gateway.listen(0, '127.0.0.1')).port}`;
  });

  afterAll(async () => {
    await gateway?.shutdown();
    await operator?.stop();
    await deleteWorkflow(c, workflow);
    client?.disconnect();
  });

  it("keeps the workflow its owner's once a model joins it", async () => {
    const name = 'model-scorer';
    const dir = await modelFolder({ 'model-settings.json': npSettings(name), 'model.joblib': 'x' });
    const res = await fetch(`${base}/events/platform/api/v1/models`, {
      method: 'POST',
      headers: { authorization: `Apikey ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name }, spec: { storageUri: `file://${dir}`, workflow } }),
    });
    expect(res.status).toBe(201);

    await eventually(() => c.apps.readNamespacedDeployment({ namespace: ns, name }), 'the Deployment');
    await setDeploymentReady(c, ns, name, 1);
    const route = await eventually(
      () => client.get(redisKeys.bdaRoute(workflow, name)).then((v) => v ?? undefined),
      'the bda route',
    );
    expect(await openSealed(redisKeys.bdaRoute(workflow, name), route)).toMatchObject({
      workflow,
      owner: 'alice',
    });
    expect(await new WorkflowRoutes(client, await testVerifier()).ownedBy('alice')).toEqual([
      { workflow, services: ['api', name] },
    ]);

    // Still alice's: she can go on changing the model in her workflow.
    const put = await fetch(`${base}/events/platform/api/v1/models/${name}`, {
      method: 'PUT',
      headers: { authorization: `Apikey ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ spec: { storageUri: `file://${dir}`, workflow, replicas: 2 } }),
    });
    expect(put.status).toBe(200);
  });
});
